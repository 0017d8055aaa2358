import Foundation

/// The wall clock in milliseconds since 1970: the unit of Kafka timestamps and
/// ``Record/sourceTimestamp``. For bookkeeping (latency, retention), never for what a
/// verdict or an event says.
package enum WallClock {
    package static func milliseconds() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }
}
