import Logging
import SignetCore
import Testing

@testable import SignetJWS

@Suite("VerificationMonitor")
struct VerificationMonitorTests {
    let monitor = VerificationMonitor(logger: Logger(label: "test"))
    let wrongBundle = (reason: ReasonCode.bundleIdMismatch, detail: "expected a, got b")

    @Test func unreadyOnlyWhenTheRecentNotificationsWereAllConfigurationRejections() async {
        // Forged input alone is an attack, not a misconfiguration.
        monitor.observe(verifiedTypes: [:], rejections: Array(repeating: (ReasonCode.invalidSignature, "forged"), count: 10))
        #expect(monitor.readiness().isReady)
        monitor.observe(verifiedTypes: [:], rejections: Array(repeating: wrongBundle, count: 4))
        #expect(monitor.readiness().isReady, "fewer than the minimum evidence")
        monitor.observe(verifiedTypes: [:], rejections: [wrongBundle])
        #expect(!monitor.readiness().isReady)
        #expect(monitor.readiness().detail.contains("bundle_id_mismatch"))
        // One accepted notification: the deployment works for some traffic.
        monitor.observe(verifiedTypes: ["TEST": 1], rejections: [])
        #expect(monitor.readiness().isReady)
        // A mixed batch is not "all rejected".
        monitor.observe(verifiedTypes: ["DID_RENEW": 1], rejections: Array(repeating: wrongBundle, count: 3))
        #expect(monitor.readiness().isReady)
    }
}
