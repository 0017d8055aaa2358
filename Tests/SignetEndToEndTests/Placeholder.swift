// End-to-end tests
