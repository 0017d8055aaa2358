import Synchronization

/// A clock the test moves by hand (ms since 1970): no test waits for real periods.
public final class TestClock: Sendable {
    private let value: Mutex<Int64>
    public init(_ start: Int64) { value = Mutex(start) }
    public var now: Int64 {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
    public var function: @Sendable () -> Int64 { { [self] in now } }
}
