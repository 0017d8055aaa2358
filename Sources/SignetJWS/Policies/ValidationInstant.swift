import Foundation

/// The instant a certificate chain is judged at, and where it came from.
struct ValidationInstant: Sendable {
    /// Milliseconds since 1970. Read from a payload that is signed but whose chain is not
    /// judged yet, so any Int64 is possible: everything below is overflow-safe.
    let milliseconds: Int64
    let source: VerificationDateSource

    var date: Date { Self.date(milliseconds) }

    /// "2026-01-01T00:00:00.000Z (the payload's signedDate)", for rejection details.
    var description: String { "\(Self.iso(milliseconds)) (\(Self.describe(source)))" }

    /// Whole seconds, rounded toward negative infinity. Written with `/` and `%` only, which
    /// cannot overflow for a divisor of 1000, because `milliseconds` is untrusted (an attacker's
    /// self-signed payload may say Int64.min, and this runs before the chain is judged).
    static func floorSeconds(_ milliseconds: Int64) -> Int64 {
        milliseconds / 1000 - (milliseconds % 1000 < 0 ? 1 : 0)
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    static func iso(_ milliseconds: Int64) -> String {
        iso(date(milliseconds))
    }

    static func iso(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true))
    }

    static func span(_ milliseconds: Int64) -> String {
        let seconds = Double(milliseconds) / 1000
        // A Double day count of any Int64 span fits in Int (|x| < 1.1e11), so `Int(_:)` cannot trap.
        if seconds < 120 { return "\(Int(seconds.rounded()))s" }
        if seconds < 7200 { return "\(Int((seconds / 60).rounded()))min" }
        if seconds < 172_800 { return "\(Int((seconds / 3600).rounded()))h" }
        return "\(Int((seconds / 86400).rounded()))d"
    }

    private static func describe(_ source: VerificationDateSource) -> String {
        switch source {
        case .signedDate: "the payload's signedDate"
        case .nestedTransactionSignedDate: "no signedDate; the nested transaction's signedDate"
        case .nestedRenewalInfoSignedDate: "no signedDate; the nested renewal info's signedDate"
        case .currentTime: "the current time"
        }
    }
}
