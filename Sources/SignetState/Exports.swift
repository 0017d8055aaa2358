// One import is enough for an embedder of the state stages: SignetJWS brings the verifier, the
// App Store models and SignetCore's pipeline with it.
@_exported public import SignetJWS
