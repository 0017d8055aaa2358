import Foundation

/// One parsing case of nst/JSONTestSuite (Tests/Fixtures/JSONTestSuite, see its README).
struct JSONTestSuiteCase: Sendable, CustomStringConvertible {
    /// What the suite expects of an RFC 8259 parser.
    enum Expectation: String, Sendable {
        case accept = "y"
        case reject = "n"
        case implementationDefined = "i"
    }

    let name: String
    let bytes: [UInt8]

    var expectation: Expectation? { Expectation(rawValue: String(name.prefix(1))) }
    var description: String { name }

    static let folder = Fixtures.root.appendingPathComponent("JSONTestSuite", isDirectory: true)

    /// Every case of one kind, sorted by name, including the generated large `n_` files.
    static func all(_ expectation: Expectation) throws -> [JSONTestSuiteCase] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0.hasPrefix(expectation.rawValue + "_") && $0.hasSuffix(".json") }
        var cases = try names.map { name in
            JSONTestSuiteCase(name: name, bytes: Array(try Data(contentsOf: folder.appendingPathComponent(name))))
        }
        if expectation == .reject { cases += generated }
        return cases.sorted { $0.name < $1.name }
    }

    /// The two upstream `n_` files not committed because of their size, rebuilt byte for byte.
    static let generated: [JSONTestSuiteCase] = [
        JSONTestSuiteCase(
            name: "n_structure_100000_opening_arrays.json",
            bytes: Array(repeating: UInt8(ascii: "["), count: 100_000)),
        JSONTestSuiteCase(
            name: "n_structure_open_array_object.json",
            bytes: Array(String(repeating: #"[{"":"#, count: 50_000).utf8) + [0x0A]),
    ]
}
