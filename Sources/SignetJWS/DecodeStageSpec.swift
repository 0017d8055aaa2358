package import SignetCore

extension ComponentSpec {
    /// `- type: decode`.
    package static let decodeStage = ComponentSpec(
        name: "decode",
        summary: "parses an input line and finds its signed JWS (signedPayload, signedTransaction, bare JWS)",
        description: "Also signedTransactionInfo and signedRenewalInfo; a line that is none of these is rejected as malformed_json.",
        fields: [
            ConfigField("workers", .int(1...256), .default("1"), "threads decoding lines", advanced: true),
        ],
        examples: ["stages:\n  - type: decode"])
}
