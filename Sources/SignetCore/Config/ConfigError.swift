/// A position in a configuration file (1-based line and column).
public struct ConfigLocation: Sendable, Hashable, CustomStringConvertible {
    /// The pipeline file.
    public var file: String
    /// The line, from 1.
    public var line: Int
    /// The column, from 1.
    public var column: Int

    /// A place in `file`.
    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(file):\(line):\(column)" }
}

/// A configuration problem, pinned to the place in the file that causes it.
///
/// Printed as `file:line:column: error: message`, the form editors and CI annotate.
public struct ConfigError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where in the file, when known.
    public var location: ConfigLocation?
    /// What is wrong and, where one is known, the fix ("did you mean").
    public var message: String

    /// An error saying `message` at `location`.
    public init(_ message: String, at location: ConfigLocation?) {
        self.message = message
        self.location = location
    }

    public var description: String {
        if let location { return "\(location): error: \(message)" }
        return "error: \(message)"
    }
}

/// Several configuration problems found in one pass (``PipelineLoader`` keeps going
/// after the first so one `signet lint` shows them all).
public struct ConfigErrors: Error, Sendable, CustomStringConvertible {
    /// Every error, sorted by place.
    public var errors: [ConfigError]
    /// The errors of one load.
    public init(_ errors: [ConfigError]) { self.errors = errors }
    public var description: String { errors.map(\.description).joined(separator: "\n") }
}
