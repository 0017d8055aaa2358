package import SignetCore

extension ComponentSpec {
    /// `- type: decode`.
    package static let decodeStage = ComponentSpec(
        name: "decode",
        summary: "parses an input line and finds its signed JWS (signedPayload, signedTransaction, bare JWS)",
        description: "Also signedTransactionInfo and signedRenewalInfo; a line that is none of these is rejected as malformed_json.",
        fields: DecodeStage.Options.configuration.fields,
        examples: ["stages:\n  - type: decode"],
        rejects: [.invalidUTF8, .malformedJSON, .missingSignedPayload])
}

extension DecodeStage.Options {
    /// The `decode` stage's keys, their defaults ``DecodeStage/Options/init()``'s.
    package static let configuration = ConfigBindings(defaults: DecodeStage.Options(), [
        ConfigBinding("workers", \.workers, .int(1...256), "threads decoding lines", advanced: true),
    ])
}
