import Dispatch
import Synchronization

extension Array where Element: Sendable {
    /// Applies `body` to every element in place, on up to `maxThreads` threads.
    ///
    /// Work is handed out one index at a time from an atomic counter, so uneven
    /// elements (a cache miss costs 10x a hit) do not leave a thread idle.
    /// Runs inline when one thread is asked for or the array is tiny: every thread gets at
    /// least two elements, since waking a parked worker costs tens of microseconds of CPU, a
    /// good part of one element's work (the webhook's trickle of one or two records a batch).
    package mutating func concurrentUpdate(
        maxThreads: Int, _ body: @Sendable (inout Element) -> Void
    ) {
        let threads = Swift.min(maxThreads, count / 2)
        guard threads > 1 else {
            for index in indices { body(&self[index]) }
            return
        }
        withUnsafeMutableBufferPointer { buffer in
            let shared = DisjointBuffer(base: buffer)
            let next = Atomic<Int>(0)
            DispatchQueue.concurrentPerform(iterations: threads) { _ in
                while true {
                    let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
                    guard index < shared.base.count else { return }
                    body(&shared.base[index])
                }
            }
        }
    }
}

/// Lets worker threads write to one buffer.
///
/// `@unchecked Sendable` is sound here: the atomic counter above hands every index
/// to exactly one worker, so no two threads touch the same element, and
/// `concurrentPerform` returns only after every worker finished, before the buffer
/// pointer goes out of scope.
private struct DisjointBuffer<Element>: @unchecked Sendable {
    let base: UnsafeMutableBufferPointer<Element>
}
