/// Expands `${VAR}` and `${VAR:default}` in configuration scalars.
///
/// `$${` writes a literal `${`. A variable that is unset and has no default is an
/// error at the scalar's position, never a silent empty string: an empty bundle id
/// must not quietly disable a check. A variable set to the empty string is set: its value
/// is used, not the default. The one expander of Signet's configuration: values in a file
/// when it is loaded, and spec defaults that name variables when their component opens
/// (``expand(_:environment:path:)``).
package final class Interpolator {
    let environment: [String: String]
    /// When set, an unset variable without default expands to this value and is
    /// recorded in ``unset`` instead of failing (`signet lint` without the deployment's environment).
    let unsetPlaceholder: String?
    private(set) var unset: [UnsetVariable] = []

    init(environment: [String: String], unsetPlaceholder: String? = nil) {
        self.environment = environment
        self.unsetPlaceholder = unsetPlaceholder
    }

    /// `text` expanded outside a file: a component's default that names variables
    /// (`${SIGNET_APPSTORE_KEY_ID}`), expanded when the component opens; errors name `path`.
    package static func expand(_ text: String, environment: [String: String], path: String) throws(ConfigError) -> String {
        try Interpolator(environment: environment).interpolate(text, at: nil, path: path)
    }

    func interpolate(_ text: String, at location: ConfigLocation?, path: String) throws(ConfigError) -> String {
        guard text.contains("$") else { return text }
        var output = ""
        var rest = Substring(text)
        while let dollar = rest.firstIndex(of: "$") {
            output += rest[..<dollar]
            let afterDollar = rest.index(after: dollar)
            if rest[afterDollar...].hasPrefix("${") {  // "$${" escapes
                output += "${"
                rest = rest[rest.index(afterDollar, offsetBy: 2)...]
                continue
            }
            guard rest[afterDollar...].hasPrefix("{") else {
                output += "$"
                rest = rest[afterDollar...]
                continue
            }
            let bodyStart = rest.index(after: afterDollar)
            guard let close = rest[bodyStart...].firstIndex(of: "}") else {
                throw ConfigError("unterminated '${' in \(describe(path))", at: location)
            }
            let body = rest[bodyStart..<close]
            let name: Substring
            let fallback: Substring?
            if let colon = body.firstIndex(of: ":") {
                name = body[..<colon]
                fallback = body[body.index(after: colon)...]
            } else {
                name = body
                fallback = nil
            }
            guard Self.isValidName(name) else {
                throw ConfigError(
                    "'${\(body)}' in \(describe(path)): a variable name is letters, digits and '_', not starting with a digit",
                    at: location)
            }
            if let value = environment[String(name)] {
                output += value
            } else if let fallback {
                output += fallback
            } else if let unsetPlaceholder, let location {
                unset.append(UnsetVariable(name: String(name), location: location))
                output += unsetPlaceholder
            } else {
                throw ConfigError(
                    "environment variable \(name) is not set and \(describe(path)) gives it no default "
                        + "(set it, or write ${\(name):default})",
                    at: location)
            }
            rest = rest[rest.index(after: close)...]
        }
        output += rest
        return output
    }

    private func describe(_ path: String) -> String { path.isEmpty ? "the value" : "'\(path)'" }

    private static func isValidName(_ name: Substring) -> Bool {
        guard let first = name.unicodeScalars.first, !("0"..."9").contains(first) else { return false }
        return name.unicodeScalars.allSatisfy { $0 == "_" || ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) }
    }
}

/// A `${VAR}` without default whose variable was not set when the file was linted.
public struct UnsetVariable: Sendable, Hashable {
    /// The variable's name.
    public var name: String
    /// Where the file uses it.
    public var location: ConfigLocation
}
