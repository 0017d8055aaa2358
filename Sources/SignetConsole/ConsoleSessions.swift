import Foundation
import Synchronization

/// The console's signed-in sessions, in memory: a restart signs everyone out, which is the safe
/// side. A session is a random 256-bit id (the cookie) with its credential's name and role and
/// a CSRF token of its own that every form carries.
final class ConsoleSessions: Sendable {
    struct Session: Sendable {
        var id: String
        var name: String
        var role: ConsoleRole
        var csrf: String
        var started: ContinuousClock.Instant
        var lastUsed: ContinuousClock.Instant
    }

    /// Sessions kept at most: past it the least recently used goes (a flood of sign-ins cannot grow memory).
    static let capacity = 10_000

    private let sessions = Mutex<[String: Session]>([:])
    private let lifetime: Duration
    private let idleTimeout: Duration

    init(lifetime: Duration, idleTimeout: Duration) {
        self.lifetime = lifetime
        self.idleTimeout = idleTimeout
    }

    /// A new session for `credential`.
    func start(_ credential: ConsoleCredential, now: ContinuousClock.Instant = .now) -> Session {
        let session = Session(
            id: Self.randomToken(), name: credential.name, role: credential.role, csrf: Self.randomToken(), started: now, lastUsed: now)
        sessions.withLock { sessions in
            if sessions.count >= Self.capacity, let oldest = sessions.values.min(by: { $0.lastUsed < $1.lastUsed }) {
                sessions[oldest.id] = nil
            }
            sessions[session.id] = session
        }
        return session
    }

    /// The live session `id` names, marked used now; nil when unknown, idle too long or too old.
    func session(_ id: String, now: ContinuousClock.Instant = .now) -> Session? {
        sessions.withLock { sessions in
            guard var session = sessions[id] else { return nil }
            guard now - session.started < lifetime, now - session.lastUsed < idleTimeout else {
                sessions[id] = nil
                return nil
            }
            session.lastUsed = now
            sessions[id] = session
            return session
        }
    }

    func end(_ id: String) {
        _ = sessions.withLock { $0.removeValue(forKey: id) }
    }

    /// 256 random bits, base64url.
    static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
