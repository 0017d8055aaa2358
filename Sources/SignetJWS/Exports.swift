// One import is enough for an embedder: the verifier's results are AppStoreModels' types, its
// roots SignetOpenSSL's certificates, and its stages SignetCore's. Without these re-exports a
// caller needs three more imports before `verifier.verifyNotification(_:)` compiles.
@_exported public import AppStoreModels
@_exported public import SignetCore
@_exported public import class SignetOpenSSL.X509Certificate
@_exported public import struct SignetOpenSSL.OpenSSLError
