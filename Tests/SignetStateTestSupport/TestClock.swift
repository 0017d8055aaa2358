import Synchronization

/// A clock the test moves by hand (ms since 1970): no test waits for real periods.
package final class TestClock: Sendable {
    private let value: Mutex<Int64>
    package init(_ start: Int64) { value = Mutex(start) }
    package var now: Int64 {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
    package var function: @Sendable () -> Int64 { { [self] in now } }
}
