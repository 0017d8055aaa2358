public import SignetFixtures

/// A test PKI whose intermediate and leaf name local OCSP responders in their
/// authorityInfoAccess, and the two responders: the root's (signed by the root, for the
/// intermediate) and the intermediate's (for the leaf).
public struct OCSPTestBed: Sendable {
    public let pki: TestPKI
    public let leafResponder: OCSPTestResponder
    public let intermediateResponder: OCSPTestResponder

    /// Starts both responders, every answer valid for `validMinutes`; `leafEntry` is the
    /// leaf's line in its responder's index (valid by default); `intermediateCRLURL`, when
    /// given, is named in the intermediate's cRLDistributionPoints.
    public static func start(
        validMinutes: Int = 60, leafEntry: (TestPKI) throws -> OCSPTestResponder.Entry = { .valid($0.leaf) },
        intermediateCRLURL: String? = nil
    ) async throws -> OCSPTestBed {
        // Both ports held at once, so they differ.
        let holders = try [LocalPortHolder(listening: false), LocalPortHolder(listening: false)]
        let (leafPort, intermediatePort) = (holders[0].port, holders[1].port)
        holders.forEach { $0.close() }
        let pki = try TestPKI(
            intermediateOCSPURL: "http://127.0.0.1:\(intermediatePort)/", leafOCSPURL: "http://127.0.0.1:\(leafPort)/",
            intermediateCRLURL: intermediateCRLURL)
        let intermediateResponder = try await OCSPTestResponder(
            issuer: pki.root, signer: pki.root, signerKey: pki.rootKey, entries: [.valid(pki.intermediate)], validMinutes: validMinutes,
            port: intermediatePort)
        do {
            let leafResponder = try await OCSPTestResponder(
                issuer: pki.intermediate, signer: pki.intermediate, signerKey: pki.intermediateKey, entries: [try leafEntry(pki)],
                validMinutes: validMinutes, port: leafPort)
            return OCSPTestBed(pki: pki, leafResponder: leafResponder, intermediateResponder: intermediateResponder)
        } catch {
            intermediateResponder.stop()
            throw error
        }
    }

    /// The leaf's responder again, on the port the leaf names (after ``leafResponder`` stopped):
    /// a responder that comes back.
    public func restartLeafResponder() async throws -> OCSPTestResponder {
        try await OCSPTestResponder(
            issuer: pki.intermediate, signer: pki.intermediate, signerKey: pki.intermediateKey, entries: [.valid(pki.leaf)],
            port: leafResponder.port)
    }

    public func stop() {
        leafResponder.stop()
        intermediateResponder.stop()
    }
}
