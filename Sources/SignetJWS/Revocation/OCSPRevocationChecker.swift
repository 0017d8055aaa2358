public import Foundation
public import SignetOpenSSL
import Synchronization

/// Asks OCSP whether the certificates of a chain were revoked, with a cache every caller
/// shares.
///
/// - Each non-root certificate is asked about at the first http(s) OCSP URL of its
///   authorityInfoAccess, the request POSTed through an ``OCSPTransport`` within
///   ``Options/deadline``; the response must be signed by the issuer or a responder the
///   issuer delegated (``OCSPResponse``).
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

        public init(
            deadline: Duration = .seconds(5), nonce: Bool = false, leewaySeconds: Int64 = 300, refreshFraction: Double = 0.1,
            refreshMargin: Duration = .seconds(3_600), refreshRetryInterval: Duration = .seconds(60),
            cacheWithoutNextUpdate: Duration = .seconds(300)
        ) {
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
    }

    private let transport: any OCSPTransport
    private let options: Options
    private let clock: @Sendable () -> Date
    private let metrics: RevocationMetrics
    private let entries = Mutex<[Key: Entry]>([:])

    /// - Parameters:
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
    }

    /// The nextUpdate of the newest good answer about `certificate`, even one that has passed;
    /// nil when none was ever had or the certificate was found revoked since.
    public func lastGoodNextUpdate(of certificate: X509Certificate, issuer: X509Certificate) -> Date? {
        let key = Key(issuerFingerprint: issuer.sha256Fingerprint, serialNumberHex: certificate.serialNumberHex)
        return entries.withLock { $0[key]?.good?.nextUpdate }
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
            let (answer, thisUpdate) = await self.ask(certificate, issuer: issuer)
            self.record(answer, thisUpdate: thisUpdate, for: key)
            return answer
        }
    }

    private func record(_ answer: RevocationAnswer, thisUpdate: Date?, for key: Key) {
        let now = clock()
        entries.withLock { entries in
            var entry = entries[key] ?? Entry()
            entry.inFlight = nil
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

    /// One OCSP exchange: build, send within the deadline, check, classify.
    private func ask(_ certificate: X509Certificate, issuer: X509Certificate) async -> (RevocationAnswer, thisUpdate: Date?) {
        guard let url = certificate.ocspURLs.first(where: { $0.hasPrefix("http://") || $0.hasPrefix("https://") }) else {
            return (.failed(.noResponder), nil)
        }
        let request: OCSPRequest
        do {
            request = try OCSPRequest(certificate: certificate, issuer: issuer, nonce: options.nonce)
        } catch {
            return (.failed(RevocationFailure(error)), nil)
        }
        let body: [UInt8]
        let started = ContinuousClock.now
        let posted = await post(request.derEncoded, to: url)
        metrics.responded(after: ContinuousClock.now - started)
        switch posted {
        case .success(let bytes): body = bytes
        case .failure(.deadlineExceeded): return (.failed(.deadlineExceeded), nil)
        case .failure(.unreachable(let detail)): return (.failed(.unreachable(detail)), nil)
        case .failure(.httpStatus(let status)): return (.failed(.unreachable("HTTP status \(status)")), nil)
        }
        let now = clock()
        let single: OCSPSingleResponse
        do {
            single = try OCSPResponse(derEncoded: body).singleResponse(
                for: certificate, issuer: issuer, request: request,
                atEpochSeconds: Int64(now.timeIntervalSince1970.rounded(.down)), leewaySeconds: options.leewaySeconds)
        } catch {
            return (.failed(RevocationFailure(error)), nil)
        }
        let thisUpdate = Date(timeIntervalSince1970: TimeInterval(single.thisUpdateEpochSeconds))
        switch single.status {
        case .good:
            let nextUpdate = single.nextUpdateEpochSeconds.map { Date(timeIntervalSince1970: TimeInterval($0)) }
                ?? now.addingTimeInterval(Self.seconds(options.cacheWithoutNextUpdate))
            return (.good(nextUpdate: nextUpdate), thisUpdate)
        case .revoked(let reason, let revokedAt):
            return (.revoked(reason: reason, date: Date(timeIntervalSince1970: TimeInterval(revokedAt))), thisUpdate)
        case .unknown:
            return (.failed(.unknown), thisUpdate)
        }
    }

    /// The transport's answer, or deadlineExceeded when `options.deadline` passes first
    /// (whatever the transport does with its own timeout).
    private func post(_ request: [UInt8], to url: String) async -> Result<[UInt8], OCSPTransportError> {
        let deadline = options.deadline
        let transport = self.transport
        return await withTaskGroup(of: Result<[UInt8], OCSPTransportError>?.self) { group in
            group.addTask {
                do throws(OCSPTransportError) {
                    return .success(try await transport.post(request, to: url, timeout: deadline))
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
