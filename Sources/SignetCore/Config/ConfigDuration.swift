import Foundation

/// Reading and writing durations in configuration: a number and a unit, always.
public enum ConfigDuration {
    static let units: [(suffix: String, seconds: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600), ("d", 86_400)]

    /// The duration `text` writes, or why it is not one.
    ///
    /// A bare number is refused: `100` could mean milliseconds or seconds, and guessing
    /// wrong is a 1000x mistake.
    public static func parse(_ text: String) -> Result<Duration, DurationError> {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let number = Double(trimmed), number.isFinite {
            return .failure(.missingUnit(trimmed))
        }
        // Longest suffix first so "ms" is not read as "s".
        for (suffix, scale) in units where trimmed.hasSuffix(suffix) {
            let number = Double(trimmed.dropLast(suffix.count).trimmingCharacters(in: .whitespaces))
            // Bounded (about 31 years) so that absurd values are an error, not an overflow trap.
            guard let number, number.isFinite, number >= 0, number * scale <= 1e9 else { return .failure(.invalid) }
            return .success(.milliseconds(Int64((number * scale * 1000).rounded())))
        }
        return .failure(.invalid)
    }

    /// The shortest exact spelling: `1500ms`, `30s`, `5m`, `24h`, `7d`.
    public static func format(_ duration: Duration) -> String {
        let milliseconds = duration.clampedMilliseconds
        if milliseconds == 0 { return "0s" }
        for (suffix, scale) in units.reversed() {
            let unit = Int64(scale * 1000)
            if milliseconds % unit == 0 { return "\(milliseconds / unit)\(suffix)" }
        }
        return "\(milliseconds)ms"
    }

    /// Why a string is not a duration.
    public enum DurationError: Error, Sendable, Equatable {
        /// A number without a unit.
        case missingUnit(String)
        /// Not a number followed by a unit (`ms`, `s`, `m`, `h`, `d`).
        case invalid

        /// The message tail after "'key' must be a duration ...".
        public var hint: String {
            switch self {
            case .missingUnit(let number): "a unit is required: write \(number)ms or \(number)s"
            case .invalid: "such as 500ms, 30s, 5m, 24h or 7d"
            }
        }
    }
}
