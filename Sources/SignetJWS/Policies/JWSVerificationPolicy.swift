import SignetCore

/// One check of JWS verification: takes what the previous steps established and either
/// returns what it establishes in turn or throws the rejection with its reason code.
///
/// The idea is swift-certificates' `VerifierPolicy`: small policies, each with one
/// concern, composed in a fixed order. Unlike a list of existentials, ``AppStoreVerifier``
/// holds each policy as a concrete stored property and calls them in sequence, so the hot
/// path has static dispatch and no per-record allocation.
protocol JWSVerificationPolicy: Sendable {
    associatedtype Input
    associatedtype Output
    /// Where this policy sits in ``VerificationStep/allCases`` (the documented order).
    static var step: VerificationStep { get }
    func check(_ input: Input, role: JWSRole) throws(RecordRejection) -> Output
}
