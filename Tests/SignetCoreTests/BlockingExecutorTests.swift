import Foundation
import Synchronization
import Testing

@testable import SignetCore

@Suite("BlockingExecutor")
struct BlockingExecutorTests {
    private static func thread() -> UInt { UInt(pthread_self()) }

    @Test func runInPlaceFromAnotherExecutorsThreadRunsOnTheCallersThreadAfterEarlierWork() async throws {
        let caller = BlockingExecutor(label: "test.caller")
        let sink = BlockingExecutor(label: "test.sink")
        let order = Mutex<[String]>([])
        // Earlier work on the sink's executor, still running when the call comes.
        sink.submit {
            Thread.sleep(forTimeInterval: 0.05)
            order.withLock { $0.append("earlier") }
        }
        let (callerThread, bodyThread, bodyExecutor) = try await withTaskExecutorPreference(caller) {
            let before = Self.thread()
            let (thread, executor) = try await sink.runInPlace { () -> (UInt, String?) in
                order.withLock { $0.append("body") }
                return (Self.thread(), BlockingExecutor.current)
            }
            return (before, thread, executor)
        }
        #expect(order.withLock { $0 } == ["earlier", "body"], "the body waits for what was submitted before it")
        #expect(bodyThread == callerThread, "no other thread is woken to run the body")
        #expect(bodyExecutor == "test.sink", "the body runs as the sink executor's work")
    }

    @Test func runInPlaceOnItsOwnExecutorRunsAtOnce() async throws {
        let executor = BlockingExecutor(label: "test.self")
        let value = try await withTaskExecutorPreference(executor) {
            try await executor.runInPlace { 42 }
        }
        #expect(value == 42)
    }

    @Test func runInPlaceFromTheCooperativePoolStillRunsOnTheExecutor() async throws {
        let executor = BlockingExecutor(label: "test.pool")
        #expect(BlockingExecutor.current == nil)
        let label = try await executor.runInPlace { BlockingExecutor.current }
        #expect(label == "test.pool")
    }

    @Test func runInPlacePassesTheBodysErrorOn() async throws {
        struct Refused: Error {}
        let caller = BlockingExecutor(label: "test.caller")
        let sink = BlockingExecutor(label: "test.sink")
        await #expect(throws: Refused.self) {
            try await withTaskExecutorPreference(caller) {
                try await sink.runInPlace { () throws -> Int in throw Refused() }
            }
        }
    }
}
