public import Foundation

/// A point in time as Apple encodes it: milliseconds since 1970-01-01T00:00:00Z.
///
/// Kept as an integer so comparisons and re-encoding are exact (a `Date` is a `Double` of
/// seconds and would round). Decodes from a JSON integer, and also from a fractional number
/// such as `1697679936049.7297`, which StoreKit Testing in Xcode emits: the fraction is
/// truncated toward zero. Encodes as a JSON integer.
public struct AppleTimestamp: Hashable, Sendable, Comparable, Codable {
    /// Milliseconds since the Unix epoch.
    public let millisecondsSince1970: Int64

    /// Creates a timestamp from milliseconds since the Unix epoch.
    public init(millisecondsSince1970: Int64) {
        self.millisecondsSince1970 = millisecondsSince1970
    }

    /// Creates a timestamp from a `Date`, truncating below a millisecond; nil when out of range.
    public init?(_ date: Date) {
        guard let milliseconds = AppleTimestamp.truncating(date.timeIntervalSince1970 * 1000) else { return nil }
        self = milliseconds
    }

    /// The same instant as a `Date`.
    public var date: Date {
        Date(timeIntervalSince1970: Double(millisecondsSince1970) / 1000)
    }

    /// Whole milliseconds from a floating value, truncated toward zero; nil if not finite or
    /// outside `Int64`.
    static func truncating(_ milliseconds: Double) -> AppleTimestamp? {
        // 2^63 is exactly representable; anything at or beyond it does not fit.
        guard milliseconds.isFinite, milliseconds > -9.223372036854775808e18, milliseconds < 9.223372036854775808e18 else {
            return nil
        }
        return AppleTimestamp(millisecondsSince1970: Int64(milliseconds.rounded(.towardZero)))
    }

    public static func < (lhs: AppleTimestamp, rhs: AppleTimestamp) -> Bool {
        lhs.millisecondsSince1970 < rhs.millisecondsSince1970
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let integer = try? container.decode(Int64.self) {
            millisecondsSince1970 = integer
            return
        }
        let value = try container.decode(Double.self)
        guard let truncated = AppleTimestamp.truncating(value) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "Timestamp \(value) is out of range")
        }
        self = truncated
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(millisecondsSince1970)
    }
}

extension AppleTimestamp: CustomStringConvertible {
    /// ISO 8601 with milliseconds, for logs and test failures.
    public var description: String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }
}
