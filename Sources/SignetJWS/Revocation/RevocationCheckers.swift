import Synchronization

/// The checkers of one registry (one process): made on first use over the registry's OCSP
/// transport (itself made then, so a pipeline with revocation off never makes one), one per
/// request deadline, so every `verify` stage and worker with the same
/// `revocation.deadline` shares one cache and one request in flight per certificate.
final class RevocationCheckers: Sendable {
    private let makeTransport: @Sendable () -> any OCSPTransport
    private let metrics: RevocationMetrics
    private let state = Mutex<(transport: (any OCSPTransport)?, checkers: [CheckerKey: OCSPRevocationChecker])>((nil, [:]))

    private struct CheckerKey: Hashable {
        var deadline: Duration
        var answersFile: String?
    }

    init(makeTransport: @escaping @Sendable () -> any OCSPTransport, metrics: RevocationMetrics) {
        self.makeTransport = makeTransport
        self.metrics = metrics
    }

    /// The checker whose requests take at most `deadline`, keeping good answers in
    /// `answersFile` (nil: in memory only).
    func checker(deadline: Duration, answersFile: String? = nil) -> OCSPRevocationChecker {
        let key = CheckerKey(deadline: deadline, answersFile: answersFile)
        return state.withLock { state in
            if let existing = state.checkers[key] { return existing }
            let transport = state.transport ?? makeTransport()
            state.transport = transport
            let made = OCSPRevocationChecker(
                transport: transport, options: .init(deadline: deadline, answersFile: answersFile), metrics: metrics)
            state.checkers[key] = made
            return made
        }
    }
}
