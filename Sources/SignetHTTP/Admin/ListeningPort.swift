import Synchronization

/// The port a listener bound, announced once it listens (tests bind port 0).
final class ListeningPort: Sendable {
    private let state = Mutex<(port: Int?, waiters: [CheckedContinuation<Int, Never>])>((nil, []))

    /// Waits until ``announce(_:)`` ran, then returns the port.
    func value() async -> Int {
        await withCheckedContinuation { continuation in
            let port = state.withLock { state -> Int? in
                if let port = state.port { return port }
                state.waiters.append(continuation)
                return nil
            }
            if let port { continuation.resume(returning: port) }
        }
    }

    /// Whether the listener got as far as listening.
    var isAnnounced: Bool { state.withLock { $0.port != nil } }

    func announce(_ port: Int) {
        let waiters = state.withLock { state in
            state.port = port
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: port) }
    }
}
