// SignetCLITests
