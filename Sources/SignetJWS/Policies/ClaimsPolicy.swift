import AppStoreModels
import SignetCore

/// Step 6 (``VerificationStep/claims``): the configured claims match, in Apple's order —
/// bundle id (`bundle_id_mismatch`), app Apple id in Production only
/// (`app_apple_id_mismatch`), environment (`environment_mismatch`). A claim the kind does
/// not carry is not compared; an unconfigured (nil) claim is not checked.
struct ClaimsPolicy<Payload: ClaimedPayload>: JWSVerificationPolicy {
    static var step: VerificationStep { .claims }

    let bundleId: String?
    let appAppleId: Int64?
    let environment: AppStoreEnvironment?

    init(configuration: VerifierConfiguration) {
        bundleId = configuration.bundleId
        appAppleId = configuration.appAppleId
        environment = configuration.environment
    }

    func check(_ payload: Payload, role: JWSRole) throws(RecordRejection) {
        if Payload.carriesBundleId, let expected = bundleId, payload.claimedBundleId != expected {
            throw RecordRejection(
                .bundleIdMismatch,
                "\(payload.claimContext())bundleId is \(Self.quote(payload.claimedBundleId)), this verifier expects \"\(expected)\" — another app's data is reaching this pipeline, or bundle_id is misconfigured")
        }
        if Payload.carriesAppAppleId, let expected = appAppleId,
           (environment ?? payload.claimedEnvironment) == .production, payload.claimedAppAppleId != expected
        {
            throw RecordRejection(
                .appAppleIdMismatch,
                "\(payload.claimContext())appAppleId is \(payload.claimedAppAppleId.map(String.init) ?? "absent"), this verifier expects \(expected) (compared in Production only)")
        }
        if let expected = environment, payload.claimedEnvironment != expected {
            throw RecordRejection(
                .environmentMismatch,
                "\(payload.claimContext())environment is \(Self.quote(payload.claimedEnvironment?.rawValue)), this verifier expects \"\(expected.rawValue)\" — Sandbox and Production data must go to separately configured pipelines")
        }
    }

    private static func quote(_ value: String?) -> String {
        value.map { "\"\($0)\"" } ?? "absent"
    }
}
