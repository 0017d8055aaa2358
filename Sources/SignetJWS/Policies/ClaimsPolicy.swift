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
    let environments: Set<AppStoreEnvironment>
    /// The accepted environments as a message names them.
    let expected: String

    init(configuration: VerifierConfiguration) {
        bundleId = configuration.bundleId
        appAppleId = configuration.appAppleId
        environments = configuration.environments
        expected = configuration.environments.map(\.rawValue).sorted().map { "\"\($0)\"" }.joined(separator: " or ")
    }

    func check(_ payload: Payload, role: JWSRole) throws(RecordRejection) {
        if Payload.carriesBundleId, let expected = bundleId, payload.claimedBundleId != expected {
            throw RecordRejection(
                .bundleIdMismatch,
                "\(payload.claimContext())bundleId is \(Self.quote(payload.claimedBundleId)), this verifier expects \"\(expected)\" — another app's data is reaching this pipeline, or bundle_id is misconfigured")
        }
        // One configured environment decides; with several (or none) the payload's own claim
        // says whose rules apply.
        if Payload.carriesAppAppleId, let expected = appAppleId,
           Payload.comparesAppAppleIdInEveryEnvironment
               || (environments.count == 1 ? environments.first : payload.claimedEnvironment) == .production,
           payload.claimedAppAppleId != expected
        {
            let scope = Payload.comparesAppAppleIdInEveryEnvironment ? "compared in every environment" : "compared in Production only"
            throw RecordRejection(
                .appAppleIdMismatch,
                "\(payload.claimContext())appAppleId is \(payload.claimedAppAppleId.map(String.init) ?? "absent"), this verifier expects \(expected) (\(scope))")
        }
        if !environments.isEmpty, !(payload.claimedEnvironment.map(environments.contains) ?? false) {
            throw RecordRejection(
                .environmentMismatch,
                "\(payload.claimContext())environment is \(Self.quote(payload.claimedEnvironment?.rawValue)), this verifier expects \(expected) — another environment's data is reaching this pipeline (to take TestFlight and App Review purchases too, accept both: environment: [Production, Sandbox])")
        }
    }

    private static func quote(_ value: String?) -> String {
        value.map { "\"\($0)\"" } ?? "absent"
    }
}
