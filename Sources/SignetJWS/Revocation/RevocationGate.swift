public import Foundation
public import Logging
public import SignetCore
import SignetOpenSSL
import Synchronization

/// The `revocation:` policy as the `verify` stage applies it to a batch, after every record's
/// offline checks: each distinct chain of the batch's verified payloads (a notification's and
/// its nested JWS') is asked about through the shared ``OCSPRevocationChecker``.
///
/// - A revoked certificate rejects every record signed under it (`certificate_revoked`).
/// - A retryable failure (``RevocationFailure``) is accepted in `soft` mode while the
///   certificate's last good nextUpdate + grace lies ahead; otherwise it holds the whole batch:
///   the stage asks again with backoff (100 ms doubling to 5 s, as the runner retries a failing
///   sink), so nothing of the batch is dead-lettered, passed on or committed meanwhile, and
///   throws ``RevocationUnavailable`` once ``RevocationPolicy/retryTimeout`` has passed, which
///   stops the run like any other infrastructure failure of a stage, or at once when the run
///   is asked to stop (``stop()``), so a SIGTERM does not wait out the retry timeout.
/// - A failure is logged at warning at most once a minute per certificate, not per record.
public final class RevocationGate: Sendable {
    /// What a failed check does: accept within a grace (`soft`) or hold the batch (`hard`).
    public let policy: RevocationPolicy
    /// The process's one checker and its cache of answers.
    public let checker: OCSPRevocationChecker
    private let metrics: RevocationMetrics
    private let logger: Logger?
    private let clock: @Sendable () -> Date
    /// Fired by ``stop()``: a held batch stops waiting.
    private let stopSignal = StopSignal()
    /// When each certificate's failure was last logged, by ``warningKey(_:)``.
    private let lastWarned = Mutex<[String: Date]>([:])

    /// - Parameters:
    ///   - policy: `soft` or `hard`, with its grace and deadline.
    ///   - metrics: where outcomes are counted.
    ///   - logger: where unanswered checks are warned about, at most once a minute each; nil: silent.
    ///   - checker: the process's one checker (one cache for every verify worker and stage).
    ///   - clock: the time `soft`'s grace is judged at (the checker's, in tests that move it).
    public init(
        policy: RevocationPolicy, checker: OCSPRevocationChecker, metrics: RevocationMetrics = RevocationMetrics(),
        logger: Logger? = nil, clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.policy = policy
        self.checker = checker
        self.metrics = metrics
        self.logger = logger
        self.clock = clock
        metrics.registerChecks()
    }

    /// What one chain's answers mean for the records signed under it.
    private enum Verdict {
        case pass
        case revoked(RecordRejection)
        /// No acceptable answer yet: the batch waits (the detail says why).
        case held(String)
    }

    /// Checks the chains of the active records of `batch` the stage verified, rejects those
    /// under a revoked certificate (as `stage`), and returns once no chain is held; throws
    /// ``RevocationUnavailable`` when one still is after the retry timeout.
    public func apply(to batch: inout RecordBatch, stage: String) async throws {
        // Records by chain, keyed by the certificates' identities: payloads verified under one
        // chain-cache entry share its objects, so this costs no hashing of DER; a chain seen
        // through two entries is merely asked about twice (the checker's cache answers).
        var chains: [[ObjectIdentifier]: [X509Certificate]] = [:]
        var recordsByChain: [[ObjectIdentifier]: [Int]] = [:]
        // Which JWS each chain signed (Apple signs a notification and its nested ones under one
        // chain, usually), for messages.
        var signed: [[ObjectIdentifier]: [String]] = [:]
        for index in batch.records.indices where batch.records[index].isActive {
            guard let verified = batch.records[index][VerifiedPayloadPart.self] else { continue }
            for (jws, chain) in Self.chains(of: verified) where chain.count >= 2 {
                let key = chain.map(ObjectIdentifier.init)
                chains[key] = chain
                recordsByChain[key, default: []].append(index)
                if !(signed[key]?.contains(jws) ?? false) { signed[key, default: []].append(jws) }
            }
        }
        var pending = Array(chains.keys)
        let started = ContinuousClock.now
        var backoff = Duration.milliseconds(100)
        while !pending.isEmpty {
            var held: [(key: [ObjectIdentifier], detail: String)] = []
            for key in pending {
                switch await judge(chains[key] ?? [], signing: signed[key] ?? []) {
                case .pass:
                    continue
                case .revoked(let rejection):
                    for index in recordsByChain[key] ?? [] where batch.records[index].isActive {
                        // Signed under a revoked certificate: not a notification to pass on either.
                        batch.records[index][ForwardablePart.self] = nil
                        batch.records[index].reject(rejection, stage: stage)
                    }
                case .held(let detail):
                    held.append((key, detail))
                }
            }
            guard let first = held.first else { return }
            // A record signed under several held chains (a notification's and its nested JWS') counts once.
            func unavailable(stopped: Bool) -> RevocationUnavailable {
                let records = Set(held.flatMap { recordsByChain[$0.key] ?? [] }).count
                return RevocationUnavailable(detail: first.detail, records: records, retryTimeout: policy.retryTimeout, stopped: stopped)
            }
            guard !stopSignal.isFired else { throw unavailable(stopped: true) }
            // The last wait ends at the deadline and is followed by one more attempt, so an
            // outage shorter than retry_timeout is ridden out even when the next backoff step
            // would pass it.
            let remaining = policy.retryTimeout - (ContinuousClock.now - started)
            guard remaining > .zero else { throw unavailable(stopped: false) }
            if await stopSignal.fired(within: min(backoff, remaining)) { throw unavailable(stopped: true) }
            try Task.checkCancellation()
            backoff = min(backoff * 2, .seconds(5))
            pending = held.map(\.key)
        }
    }

    /// The run is stopping: a batch held now or later throws ``RevocationUnavailable`` at once
    /// (`stopped`) instead of waiting out the retry timeout; chains with an answer still pass.
    public func stop() {
        stopSignal.fire()
    }

    /// Asks about every certificate of `chain` but the root; revoked wins over held. `jws`
    /// names what the chain signed, for the messages.
    private func judge(_ chain: [X509Certificate], signing jws: [String]) async -> Verdict {
        let of = jws.isEmpty ? "" : " of " + jws.joined(separator: " and ")
        let answers = await checker.check(chain: chain).answers
        var verdict = Verdict.pass
        for (index, (certificate, answer)) in answers.enumerated() {
            let issuer = chain[index + 1]
            switch answer {
            case .good:
                metrics.checked("good")
            case .revoked(let reason, let date):
                metrics.checked("revoked")
                return .revoked(
                    RecordRejection(
                        .certificateRevoked,
                        "x5c[\(index)]\(of) (\(certificate.subject), serial \(certificate.serialNumberHex)) was revoked at \(date) (\(reason?.description ?? "no reason given")), says \(checker.answerSource(of: certificate, issuer: issuer) ?? "its issuer")"))
            case .failed(let failure):
                metrics.checked(failure.name)
                if policy.mode == .soft, let lastGood = checker.lastGoodNextUpdate(of: certificate, issuer: issuer),
                    clock() < lastGood.addingTimeInterval(policy.grace.seconds)
                {
                    metrics.checked("accepted_in_grace")
                    warn(certificate, "accepted in soft mode (last good answer valid until \(lastGood), grace \(ConfigDuration.format(policy.grace))): \(failure)")
                    continue
                }
                let asked = checker.answerSource(of: certificate, issuer: issuer) ?? "OCSP or CRL"
                let detail = "no revocation answer (asked: \(asked)) for x5c[\(index)]\(of) (\(certificate.subject), serial \(certificate.serialNumberHex)): \(failure)"
                warn(certificate, "\(detail); records wait (\(policy.mode.rawValue) mode)")
                if case .pass = verdict { verdict = .held(detail) }
            }
        }
        return verdict
    }

    /// Logs at warning unless this certificate's failure was logged less than a minute ago.
    private func warn(_ certificate: X509Certificate, _ message: String) {
        guard let logger else { return }
        let now = clock()
        let key = certificate.sha256FingerprintHex
        let due = lastWarned.withLock { warned in
            if let last = warned[key], now.timeIntervalSince(last) < 60 { return false }
            warned[key] = now
            return true
        }
        if due { logger.warning("verify: revocation check: \(message)") }
    }

    /// Every chain a verified payload was signed under, with what it signed: its own and its
    /// nested JWS'.
    static func chains(of verified: VerifiedPayload) -> [(jws: String, chain: [X509Certificate])] {
        switch verified {
        case .notification(let notification):
            [("the notification", notification.certificateChain),
             ("its signedTransactionInfo", notification.transaction?.certificateChain ?? []),
             ("its signedRenewalInfo", notification.renewalInfo?.certificateChain ?? []),
             ("its signedAppTransactionInfo", notification.appTransaction?.certificateChain ?? [])]
        case .transaction(let transaction): [("the transaction", transaction.certificateChain)]
        case .renewalInfo(let renewalInfo): [("the renewal info", renewalInfo.certificateChain)]
        case .status(let status):
            [("the status' transaction", status.transaction.certificateChain), ("the status' renewal info", status.renewalInfo.certificateChain)]
        }
    }
}
