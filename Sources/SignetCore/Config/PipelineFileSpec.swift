/// The top-level keys of a pipeline file: one definition that the loader, `signet lint`, the
/// JSON Schema, docs/pipelines.md and `signet components --json` all read, as each
/// component's ``ComponentSpec`` is for its own keys. Sections (`settings:`, `http:`) are
/// registered components and come from the registry.
package struct PipelineFileSpec: Sendable {
    /// What a top-level key holds.
    public enum Shape: Sendable, Equatable {
        /// Free text.
        case text
        /// One component of the kind (`type:` names it).
        case component(ComponentKind)
        /// A list of components, in order.
        case list(ComponentKind)
        /// Named components (`name: { type: … }`); at least `minimum` of them.
        case named(ComponentKind, minimum: Int)
        /// A sink with the dead-letter keys (``DeadLetterOutput/fields``) besides its own.
        case deadLetter
    }

    /// One top-level key.
    public struct Key: Sendable {
        public var name: String
        public var shape: Shape
        public var isRequired: Bool
        /// What it is for, in a phrase (schema descriptions, the docs' table).
        public var summary: String
        /// A one-line YAML value, for the overview in docs/pipelines.md.
        public var example: String
        /// Said when a required key is missing: what to write.
        public var missingHint: String?
    }

    /// In the order a file is usually written and the docs show them.
    public let keys: [Key]

    public static let pipeline = PipelineFileSpec(keys: [
        Key(name: "description", shape: .text, isRequired: false, summary: "free text for people", example: "free text for people"),
        Key(
            name: "stores", shape: .named(.store, minimum: 0), isRequired: false,
            summary: "named state stores stages share (`store: NAME`); `default` exists implicitly",
            example: "{ default: { type: sqlite, path: ... } }"),
        Key(name: "source", shape: .component(.source), isRequired: true, summary: "where records come from: exactly one", example: "{ type: stdin, ... }"),
        Key(name: "stages", shape: .list(.stage), isRequired: false, summary: "run in order", example: "[ { type: decode }, ... ]"),
        Key(
            name: "sinks", shape: .named(.sink, minimum: 1), isRequired: true,
            summary: "where events go: one or more, named (fanout routes by name)", example: "{ name: { type: stdout }, ... }"),
        Key(
            name: "dead_letter", shape: .deadLetter, isRequired: true,
            summary: "where rejected input is kept, with its reason: any sink type plus the dead-letter keys",
            example: "{ type: file, path: ..., format: json }",
            missingHint: "so that rejected input is kept (for example: dead_letter: { type: file, path: dead-letter.ndjson })"),
    ])

    /// The key called `name`.
    public subscript(name: String) -> Key? { keys.first { $0.name == name } }

    public var names: [String] { keys.map(\.name) }
}
