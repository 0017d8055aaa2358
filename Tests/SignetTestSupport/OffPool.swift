import Foundation

/// Runs blocking work (waiting for a process, a PostgreSQL round trip) on a thread of its
/// own and awaits it without holding a thread of Swift's cooperative pool.
///
/// That pool has one thread per core (two in CI). Tests run in parallel on it, so a test
/// that blocks it for a second stalls every other test for that second: Kafka group joins
/// and time limits elsewhere then fail for no fault of their own.
public func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
