public import Foundation
public import SignetOpenSSL
import Synchronization

/// Asks OCSP (else the issuer's CRL) whether the certificates of a chain were revoked, with a
/// cache every caller shares.
///
/// - Each non-root certificate is asked about at the first http(s) OCSP URL of its
///   authorityInfoAccess, the request POSTed through an ``OCSPTransport`` within
///   ``Options/deadline``; the response must be signed by the issuer or a responder the
///   issuer delegated (`OCSPResponse`).
/// - When OCSP gives no answer (a failure of any class, or no responder) and the certificate
///   names an http(s) cRLDistributionPoint (Apple's intermediate names
///   crl.apple.com/applerootcag3.crl), that CRL is fetched within another deadline and must be
///   a complete list the issuer signed, not past its nextUpdate (`CertificateRevocationList`):
///   listed is revoked, absent is good until the list's nextUpdate. A CRL that fails too
///   leaves OCSP's failure as the answer.
/// - A good answer is cached under (issuer, serial) until its nextUpdate, not for a fixed
///   time; once less than ``Options/refreshFraction`` of its window (or
///   ``Options/refreshMargin``, whichever is longer, at most half the window) remains, the
///   next check starts a refresh in the background and still returns the cached answer at
///   once: while a good answer is valid, no caller waits on the network.
/// - One request in flight per certificate: callers arriving while one runs await the same
///   answer (single flight).
/// - A revoked answer is kept for the life of the checker (a revocation is not taken back,
///   except certificateHold, which Apple does not use on these certificates); a failure is
///   not cached, so the next check asks again, but a failed background refresh waits
///   ``Options/refreshRetryInterval`` before the next one, and the cached good answer stays
///   until its nextUpdate.
///
/// The `verify` stage's `revocation:` policy (``RevocationGate``) calls it only for chains that
/// passed the offline check, so the cache, one entry per certificate ever checked, holds
/// certificates issued under a configured root: a handful.
public final class OCSPRevocationChecker: Sendable {
    /// How the checker asks and caches.
    public struct Options: Sendable {
        /// The longest a request may take, connection included.
        public var deadline: Duration
        /// Add a nonce to every request (responders with pre-signed answers ignore it).
        public var nonce: Bool
        /// Clock skew allowed on thisUpdate and nextUpdate, seconds.
        public var leewaySeconds: Int64
        /// Refresh ahead once less than this share of a good answer's window remains.
        public var refreshFraction: Double
        /// ... or less than this much time.
        public var refreshMargin: Duration
        /// After a failed background refresh, the wait before the next one.
        public var refreshRetryInterval: Duration
        /// How long a good answer without nextUpdate is kept (RFC 5019 responders always give one).
        public var cacheWithoutNextUpdate: Duration
        /// Where good OCSP answers are kept across restarts (`soft` mode's grace counts from
        /// them); nil: in memory only.
        public var answersFile: String?

        /// The settings, each defaulting to `revocation:`'s in a pipeline file.
        public init(
            deadline: Duration = .seconds(5), nonce: Bool = false, leewaySeconds: Int64 = 300, refreshFraction: Double = 0.1,
            refreshMargin: Duration = .seconds(3_600), refreshRetryInterval: Duration = .seconds(60),
            cacheWithoutNextUpdate: Duration = .seconds(300), answersFile: String? = nil
        ) {
            self.answersFile = answersFile
            self.deadline = deadline
            self.nonce = nonce
            self.leewaySeconds = leewaySeconds
            self.refreshFraction = refreshFraction
            self.refreshMargin = refreshMargin
            self.refreshRetryInterval = refreshRetryInterval
            self.cacheWithoutNextUpdate = cacheWithoutNextUpdate
        }
    }

    /// A certificate as its issuer names it: what an OCSP CertID identifies.
    struct Key: Hashable {
        var issuerFingerprint: [UInt8]
        var serialNumberHex: String
    }

    /// What the cache knows about one certificate.
    struct Entry {
        /// The newest good answer: its window and when to start refreshing it. Kept after its
        /// nextUpdate passed (until a newer one or a revocation replaces it): `soft` mode's grace
        /// counts from it (``lastGoodNextUpdate(of:issuer:)``).
        var good: (nextUpdate: Date, refreshAt: Date)?
        var revoked: RevocationAnswer?
        /// The request now running for this certificate (a caller's or a background refresh).
        var inFlight: Task<RevocationAnswer, Never>?
        /// No background refresh before this (set when one failed).
        var refreshNotBefore: Date?
        /// Who gave the last answer: `OCSP`, `its CRL`, or for a failure those that were asked.
        var source: String?
    }

    private let transport: any OCSPTransport
    private let options: Options
    private let clock: @Sendable () -> Date
    private let metrics: RevocationMetrics
    private let entries = Mutex<[Key: Entry]>([:])
    /// Good OCSP answers kept in ``Options/answersFile`` (read at start, not believed until
    /// verified again), and the file.
    private let kept: Mutex<[Key: RevocationAnswerFile.Entry]>
    /// Held while the answers file is written, so writes never overtake each other.
    private let fileWrites = Mutex<Void>(())
    private let answerFile: RevocationAnswerFile?

    /// - Parameters:
    ///   - transport: how requests reach the responders (HTTP in production).
    ///   - options: deadlines, cache lifetimes and the answers file.
    ///   - clock: the time responses are checked at (tests move it).
    ///   - metrics: where cache hits and responder latency are counted.
    public init(
        transport: any OCSPTransport, options: Options = Options(), clock: @escaping @Sendable () -> Date = { Date() },
        metrics: RevocationMetrics = RevocationMetrics()
    ) {
        self.transport = transport
        self.options = options
        self.clock = clock
        self.metrics = metrics
        answerFile = options.answersFile.map(RevocationAnswerFile.init(path:))
        // An unreadable file only loses the grace it held: it is replaced at the next good answer.
        let stored = (try? answerFile?.load()) ?? []
        kept = Mutex(Dictionary(stored.compactMap { entry in
            SHA256.bytes(hex: entry.issuer).map { (Key(issuerFingerprint: $0, serialNumberHex: entry.serial), entry) }
        }, uniquingKeysWith: { $0.fetchedAt >= $1.fetchedAt ? $0 : $1 }))
    }

    /// The nextUpdate of the newest good answer about `certificate`, even one that has passed;
    /// nil when none was ever had or the certificate was found revoked since.
    ///
    /// One kept in ``Options/answersFile`` by an earlier process counts once verified again
    /// here (signed by the issuer or its delegate, about this certificate, good, at the instant
    /// it was fetched); one that is not is dropped.
    public func lastGoodNextUpdate(of certificate: X509Certificate, issuer: X509Certificate) -> Date? {
        let key = Key(issuerFingerprint: issuer.sha256Fingerprint, serialNumberHex: certificate.serialNumberHex)
        let (known, revoked) = entries.withLock { ($0[key]?.good?.nextUpdate, $0[key]?.revoked != nil) }
        if let known { return known }
        guard !revoked, let stored = kept.withLock({ $0[key] }) else { return nil }
        guard let der = Data(base64Encoded: stored.response).map(Array.init),
            let request = try? OCSPRequest(certificate: certificate, issuer: issuer, nonce: false),
            let single = try? OCSPResponse(derEncoded: der).singleResponse(
                for: certificate, issuer: issuer, request: request, atEpochSeconds: stored.fetchedAt,
                leewaySeconds: options.leewaySeconds),
            case .good = single.status
        else {
            kept.withLock { $0[key] = nil }
            return nil
        }
        let next = nextUpdate(single.nextUpdateEpochSeconds, now: Self.date(stored.fetchedAt))
        entries.withLock { entries in
            var entry = entries[key] ?? Entry()
            if entry.good == nil, entry.revoked == nil { entry.good = (next, next) }
            entries[key] = entry
        }
        return next
    }

    /// Who gave the newest answer about `certificate` (`OCSP`, `its CRL`; for a failure, those
    /// asked: `OCSP and its CRL`, `OCSP (the certificate names no CRL)`), for messages.
    public func answerSource(of certificate: X509Certificate, issuer: X509Certificate) -> String? {
        let key = Key(issuerFingerprint: issuer.sha256Fingerprint, serialNumberHex: certificate.serialNumberHex)
        return entries.withLock { $0[key]?.source }
    }

    /// Checks every certificate of `chain` (leaf first, root last) but the root, each against
    /// the next one as issuer, concurrently.
    public func check(chain: [X509Certificate]) async -> ChainRevocation {
        guard chain.count >= 2 else { return ChainRevocation(answers: []) }
        let pairs = Array(zip(chain.dropLast(), chain.dropFirst()))
        let answers = await withTaskGroup(of: (Int, RevocationAnswer).self) { group in
            for (index, pair) in pairs.enumerated() {
                group.addTask { (index, await self.check(pair.0, issuer: pair.1)) }
            }
            var answers = [RevocationAnswer?](repeating: nil, count: pairs.count)
            for await (index, answer) in group { answers[index] = answer }
            return answers.map { $0 ?? .failed(.unreachable("not checked")) }
        }
        return ChainRevocation(answers: zip(pairs.map(\.0), answers).map { ($0, $1) })
    }

    /// Checks one certificate issued by `issuer`: the cached answer while it is valid,
    /// else the running request's, else a new request's.
    public func check(_ certificate: X509Certificate, issuer: X509Certificate) async -> RevocationAnswer {
        let key = Key(issuerFingerprint: issuer.sha256Fingerprint, serialNumberHex: certificate.serialNumberHex)
        let now = clock()
        let (cached, running): (RevocationAnswer?, Task<RevocationAnswer, Never>?) = entries.withLock { entries in
            var entry = entries[key] ?? Entry()
            defer { entries[key] = entry }
            if let revoked = entry.revoked { return (revoked, nil) }
            if let good = entry.good, now < good.nextUpdate {
                if now >= good.refreshAt, entry.inFlight == nil, entry.refreshNotBefore.map({ now >= $0 }) ?? true {
                    entry.inFlight = start(key, certificate, issuer)
                }
                return (.good(nextUpdate: good.nextUpdate), nil)
            }
            if let inFlight = entry.inFlight { return (nil, inFlight) }
            let task = start(key, certificate, issuer)
            entry.inFlight = task
            return (nil, task)
        }
        if let cached {
            metrics.cacheHit()
            return cached
        }
        // A caller cancelled here stops waiting; the shared request goes on for the others.
        return await running?.value ?? .failed(.unreachable("no request"))
    }

    /// The request for `key`, in a task of its own so every caller can await it; it records
    /// its answer before it returns it.
    private func start(_ key: Key, _ certificate: X509Certificate, _ issuer: X509Certificate) -> Task<RevocationAnswer, Never> {
        Task {
            let (answer, thisUpdate, source, evidence) = await self.ask(certificate, issuer: issuer)
            self.record(answer, thisUpdate: thisUpdate, source: source, for: key)
            self.keep(answer, evidence: evidence, for: key)
            return answer
        }
    }

    private func record(_ answer: RevocationAnswer, thisUpdate: Date?, source: String, for key: Key) {
        let now = clock()
        entries.withLock { entries in
            var entry = entries[key] ?? Entry()
            entry.inFlight = nil
            entry.source = source
            switch answer {
            case .good(let nextUpdate):
                let window = nextUpdate.timeIntervalSince(thisUpdate ?? now)
                let margin = min(max(window * options.refreshFraction, Self.seconds(options.refreshMargin)), window / 2)
                entry.good = (nextUpdate, nextUpdate.addingTimeInterval(-max(margin, 0)))
                entry.refreshNotBefore = nil
            case .revoked:
                entry.revoked = answer
                entry.good = nil
            case .failed:
                entry.refreshNotBefore = now.addingTimeInterval(Self.seconds(options.refreshRetryInterval))
            }
            entries[key] = entry
        }
    }

    /// The certificate's OCSP answer; when OCSP gives none (any failure, or no responder) and
    /// the certificate names an http CRL distribution point, the CRL's answer instead, unless
    /// that fails too: then the OCSP failure (the CRL's when there is no responder), so a
    /// fallback never turns a failure into another class.
    private func ask(
        _ certificate: X509Certificate, issuer: X509Certificate
    ) async -> (RevocationAnswer, thisUpdate: Date?, source: String, evidence: [UInt8]?) {
        let ocsp = await askOCSP(certificate, issuer: issuer)
        guard case .failed(let failure) = ocsp.0 else { return (ocsp.0, ocsp.thisUpdate, "OCSP", ocsp.body) }
        guard let url = certificate.crlURLs.first(where: { $0.hasPrefix("http://") || $0.hasPrefix("https://") }) else {
            return (ocsp.0, ocsp.thisUpdate, "OCSP (the certificate names no CRL)", nil)
        }
        let crl = await askCRL(certificate, issuer: issuer, url: url)
        if case .failed = crl.0 {
            return failure != .noResponder
                ? (ocsp.0, ocsp.thisUpdate, "OCSP and its CRL", nil) : (crl.0, crl.thisUpdate, "its CRL (no OCSP responder)", nil)
        }
        return (crl.0, crl.thisUpdate, "its CRL (OCSP gave no answer)", nil)
    }

    /// Keeps a good OCSP answer in the answers file (a revoked one removes the kept answer).
    /// Rare (once per certificate per refresh), so the whole file is written each time.
    private func keep(_ answer: RevocationAnswer, evidence: [UInt8]?, for key: Key) {
        guard let answerFile else { return }
        let changed = kept.withLock { kept in
            switch answer {
            case .good:
                guard let evidence else { return false }
                kept[key] = RevocationAnswerFile.Entry(
                    issuer: SHA256.hex(key.issuerFingerprint), serial: key.serialNumberHex,
                    fetchedAt: Int64(clock().timeIntervalSince1970.rounded(.down)), response: Data(evidence).base64EncodedString())
            case .revoked:
                guard kept.removeValue(forKey: key) != nil else { return false }
            case .failed:
                return false
            }
            return true
        }
        guard changed else { return }
        // One write at a time, each of the answers as they stand when it starts: a snapshot
        // taken before another certificate's answer can no longer be written after it (the
        // leaf's and the intermediate's answers arrive together, and on a loaded machine the
        // file kept one of them).
        fileWrites.withLock { _ in
            try? answerFile.save(kept.withLock { Array($0.values) })
        }
    }

    /// One OCSP exchange: build, send within the deadline, check, classify.
    private func askOCSP(_ certificate: X509Certificate, issuer: X509Certificate) async -> (RevocationAnswer, thisUpdate: Date?, body: [UInt8]?) {
        guard let url = certificate.ocspURLs.first(where: { $0.hasPrefix("http://") || $0.hasPrefix("https://") }) else {
            return (.failed(.noResponder), nil, nil)
        }
        let request: OCSPRequest
        do {
            request = try OCSPRequest(certificate: certificate, issuer: issuer, nonce: options.nonce)
        } catch {
            return (.failed(RevocationFailure(error)), nil, nil)
        }
        let started = ContinuousClock.now
        let transport = self.transport
        let posted = await withinDeadline { timeout throws(OCSPTransportError) in
            try await transport.post(request.derEncoded, to: url, timeout: timeout)
        }
        metrics.responded(after: ContinuousClock.now - started)
        let body: [UInt8]
        switch posted {
        case .success(let bytes): body = bytes
        case .failure(let error): return (.failed(RevocationFailure(error)), nil, nil)
        }
        let now = clock()
        let single: OCSPSingleResponse
        do {
            single = try OCSPResponse(derEncoded: body).singleResponse(
                for: certificate, issuer: issuer, request: request,
                atEpochSeconds: Int64(now.timeIntervalSince1970.rounded(.down)), leewaySeconds: options.leewaySeconds)
        } catch {
            return (.failed(RevocationFailure(error)), nil, nil)
        }
        let thisUpdate = Self.date(single.thisUpdateEpochSeconds)
        switch single.status {
        case .good:
            return (.good(nextUpdate: nextUpdate(single.nextUpdateEpochSeconds, now: now)), thisUpdate, body)
        case .revoked(let reason, let revokedAt):
            return (.revoked(reason: reason, date: Self.date(revokedAt)), thisUpdate, nil)
        case .unknown:
            return (.failed(.unknown), thisUpdate, nil)
        }
    }

    /// The issuer's CRL at `url`, fetched within the deadline, checked and searched for the
    /// certificate. Not cached as a list: the answer is cached per certificate like an OCSP
    /// one (until the list's nextUpdate), and the next refresh asks OCSP first again.
    private func askCRL(_ certificate: X509Certificate, issuer: X509Certificate, url: String) async -> (RevocationAnswer, thisUpdate: Date?) {
        let transport = self.transport
        let fetched = await withinDeadline { timeout throws(OCSPTransportError) in try await transport.get(url, timeout: timeout) }
        let answer: (RevocationAnswer, thisUpdate: Date?)
        switch fetched {
        case .failure(let error):
            answer = (.failed(RevocationFailure(error)), nil)
        case .success(let body):
            let now = clock()
            do {
                let status = try CertificateRevocationList(derEncoded: body).status(
                    of: certificate, issuer: issuer, atEpochSeconds: Int64(now.timeIntervalSince1970.rounded(.down)),
                    leewaySeconds: options.leewaySeconds)
                let thisUpdate = Self.date(status.thisUpdateEpochSeconds)
                if let revocation = status.revocation {
                    answer = (.revoked(reason: revocation.reason, date: Self.date(revocation.revokedAtEpochSeconds)), thisUpdate)
                } else {
                    answer = (.good(nextUpdate: nextUpdate(status.nextUpdateEpochSeconds, now: now)), thisUpdate)
                }
            } catch {
                answer = (.failed(RevocationFailure(error)), nil)
            }
        }
        switch answer.0 {
        case .good: metrics.crlFetched("good")
        case .revoked: metrics.crlFetched("revoked")
        case .failed(let failure): metrics.crlFetched(failure.name)
        }
        return answer
    }

    /// A good answer's nextUpdate: the one given, else ``Options/cacheWithoutNextUpdate`` from now.
    private func nextUpdate(_ epochSeconds: Int64?, now: Date) -> Date {
        epochSeconds.map(Self.date) ?? now.addingTimeInterval(Self.seconds(options.cacheWithoutNextUpdate))
    }

    private static func date(_ epochSeconds: Int64) -> Date { Date(timeIntervalSince1970: TimeInterval(epochSeconds)) }

    /// The transport's answer, or deadlineExceeded when `options.deadline` passes first
    /// (whatever the transport does with its own timeout).
    private func withinDeadline(
        _ exchange: @escaping @Sendable (Duration) async throws(OCSPTransportError) -> [UInt8]
    ) async -> Result<[UInt8], OCSPTransportError> {
        let deadline = options.deadline
        return await withTaskGroup(of: Result<[UInt8], OCSPTransportError>?.self) { group in
            group.addTask {
                do throws(OCSPTransportError) {
                    return .success(try await exchange(deadline))
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                // Cancelled (the request finished first): no verdict from this child.
                guard (try? await Task.sleep(for: deadline)) != nil else { return nil }
                return .failure(.deadlineExceeded)
            }
            var outcome: Result<[UInt8], OCSPTransportError> = .failure(.deadlineExceeded)
            for await result in group {
                guard let result else { continue }
                outcome = result
                break
            }
            group.cancelAll()
            return outcome
        }
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
