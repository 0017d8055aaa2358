/// A stable, machine-readable reason why a record was rejected.
///
/// Codes are part of Signet's public contract: dead-letter consumers, alerts and
/// dashboards match on them, so a code is never renamed once released. The full
/// list with meanings is in `docs/reason-codes.md`. Each module declares the codes its
/// components reject with, in an extension beside them (`SignetJWS` the decode and verify
/// codes, `SignetState` the transition's, `SignetHTTP` the http sink's); this file holds the
/// type and the sources' own. Embedders define theirs the same way
/// (`ReasonCode("my_check_failed")`); prefer a prefix to avoid clashes.
public struct ReasonCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    /// A code; reason codes are `snake_case` and never renamed once released.
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { self.rawValue = value }
    public var description: String { rawValue }

    // MARK: Input framing (sources)
    /// The line is longer than the source's `max_line_bytes`.
    public static let lineTooLarge: ReasonCode = "line_too_large"
}

/// Why a stage turned a record away: a stable code and a human explanation.
///
/// Throw it from a stage to send the record to the dead-letter sink; the run goes on.
public struct RecordRejection: Error, Hashable, Sendable, CustomStringConvertible {
    /// Why, as a stable code (docs/reason-codes.md): what to count and alert on.
    public var reason: ReasonCode
    /// What and where, for people.
    public var detail: String
    /// A rejection for `reason`, explained by `detail`.
    public init(_ reason: ReasonCode, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }
    public var description: String { "\(reason): \(detail)" }
}
