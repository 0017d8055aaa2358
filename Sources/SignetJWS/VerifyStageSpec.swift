package import SignetCore

extension ComponentSpec {
    /// `- type: verify`.
    package static let verifyStage = ComponentSpec(
        name: "verify",
        summary: "verifies ES256 signature, x5c chain to the roots, Apple OIDs, dates, claims, nested JWS",
        description: "docs/verification.md describes the checks; the verified document goes on the record for the stages after it, and is published unless a later `transition` replaces it with events (then it is not built).",
        fields: [
            ConfigField(
                "roots", .stringList(allowed: nil), .default("apple"),
                "trusted roots: apple (the built-in Apple Root CA - G3) and/or PEM or DER file paths; a list or a comma-separated string",
                example: "apple"),
            ConfigField(
                "environment", .stringList(allowed: ["Production", "Sandbox", "Xcode", "LocalTesting"]), .required,
                "the environment every payload must claim, or several (`[Production, Sandbox]`, or `Production,Sandbox` in one variable): "
                    + "each payload is checked by its own environment's rules and its state kept under it (Xcode and LocalTesting only with private test roots)",
                example: "Sandbox"),
            ConfigField("bundle_id", .string, .required, "your app's bundle id; other apps' payloads are rejected", example: "com.example.app"),
            ConfigField(
                "app_apple_id", .int(1...Int.max), .optional,
                "your app's Apple ID; required for Production (Apple sends none in Sandbox)", example: "1234567890"),
            ConfigField("workers", .int(0...256), .default("0"), "threads verifying signatures; 0 = every core"),
            ConfigField(
                "revocation", .object(RevocationPolicy.configuration.fields + [RevocationPolicy.answersFileField]), .optional,
                "online OCSP check of every chain that passed the offline checks (docs/verification.md); off unless a mode is given",
                example: "{mode: hard}"),
        ] + VerifierConfiguration.configuration.fields,
        examples: [
            "stages:\n  - type: decode\n  - type: verify\n    environment: Production\n    bundle_id: com.example.app\n    app_apple_id: 1234567890",
        ],
        requiresBefore: ["decode"],
        rejects: [
            .malformedJWS, .unsupportedAlgorithm, .unsupportedHeader, .invalidX5C, .invalidCertificateChain, .missingAppleOID,
            .certificateNotValidAtSignedDate, .signedDateInFuture, .invalidSignature, .malformedPayload, .environmentMismatch,
            .bundleIdMismatch, .appAppleIdMismatch, .nestedJWSInvalid, .certificateRevoked,
        ])
}

extension VerifierConfiguration {
    /// The `verify` keys that set a checking option, their defaults `VerifierConfiguration()`'s.
    /// roots, environment, bundle_id and app_apple_id are read apart: a list of files, a
    /// required list, a required string, and a check that needs the environments.
    package static let configuration = ConfigBindings<VerifierConfiguration>(defaults: VerifierConfiguration(), [
        ConfigBinding(
            "max_future_skew", \.maxFutureSkew, .duration(.zero...(.seconds(86_400))),
            "how far a signedDate may lie in the future before it is rejected", advanced: true),
        ConfigBinding(
            "check_time", \.dateRule, .enumeration(VerificationDateRule.allCases.map(\.rawValue)),
            "the instant certificates are judged at: the payload's signedDate, or now", advanced: true),
        ConfigBinding("chain_cache_size", \.chainCacheCapacity, .int(1...1_000_000), "verified certificate chains kept", advanced: true),
    ])
}

extension RevocationPolicy {
    /// `revocation.answers_file`: read apart (its default depends on the environment).
    package static let answersFileField = ConfigField(
        "answers_file", .string, .optional,
        "soft mode: where good OCSP answers are kept across restarts, so a restart during a responder outage keeps the grace (each verified again when used); default $SIGNET_DATA_DIR/revocation-answers.json, \"\": in memory only",
        advanced: true)

    /// The keys of `verify`'s `revocation:` mapping, their defaults `RevocationPolicy()`'s.
    package static let configuration = ConfigBindings<RevocationPolicy>(defaults: RevocationPolicy(), [
        ConfigBinding(
            "mode", \.mode, .enumeration(Mode.allCases.map(\.rawValue)),
            "off: no online check; hard: a record whose chain gets no revocation answer (OCSP, else the CRL) waits (never dead-lettered or committed); "
                + "soft: as hard, but accepted while the last good answer's nextUpdate + grace is ahead; revoked is rejected in both"),
        ConfigBinding(
            "grace", \.grace, .duration(.zero...(.seconds(30 * 86_400))),
            "soft mode: how long past the last good answer's nextUpdate a failed check is still accepted"),
        ConfigBinding("deadline", \.deadline, .duration(.milliseconds(100)...(.seconds(60))), "the longest one OCSP request may take"),
        ConfigBinding(
            "retry_timeout", \.retryTimeout, .duration(.zero...(.seconds(86_400))),
            "how long a batch waiting for an OCSP answer keeps asking before the run stops (as sink_retry_timeout for a sink); 0s: stop at once",
            advanced: true),
    ])
}
