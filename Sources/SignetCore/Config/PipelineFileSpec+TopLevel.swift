extension PipelineFileSpec {
    /// The top level of one pipeline file as this spec reads it: each key's node by its
    /// ``Shape``, and the one error for a key neither the spec, a registered section nor a
    /// built-in key knows (with a "did you mean").
    struct TopLevel {
        let root: ConfigNode
        private let pairs: [(key: ConfigNode, value: ConfigNode)]

        /// Throws unless `root` is a mapping (an empty file counts as an empty one).
        init(_ root: ConfigNode) throws(ConfigError) {
            self.root = root
            switch root.value {
            case .mapping(let pairs): self.pairs = pairs
            case .null: self.pairs = []
            default:
                throw ConfigError("\(ConfigWording.name(root.path)) must be a mapping, not \(root.kindDescription)", at: root.location)
            }
        }

        /// The value of `key`; nil when absent or null.
        func node(_ key: String) -> ConfigNode? {
            guard let pair = pairs.first(where: { Self.isKey($0.key, key) }), !Self.isNull(pair.value) else { return nil }
            return pair.value
        }

        /// Whether the file writes `key` at all (with a value or without).
        func contains(_ key: String) -> Bool { pairs.contains { Self.isKey($0.key, key) } }

        /// The named entries of a ``Shape/named(_:minimum:)`` key (`stores:`, `sinks:`), in file
        /// order; nil when absent or null.
        func entries(_ key: String) throws(ConfigError) -> [(name: String, node: ConfigNode)]? {
            guard let node = node(key) else { return nil }
            guard case .mapping(let pairs) = node.value else {
                throw ConfigError("\(ConfigWording.name(node.path)) must be a mapping, not \(node.kindDescription)", at: node.location)
            }
            return pairs.compactMap { pair in
                guard case .scalar(let name) = pair.key.value else { return nil }
                return (name, pair.value)
            }
        }

        /// The items of a ``Shape/list(_:)`` key (`stages:`); nil when absent or null.
        func list(_ key: String) throws(ConfigError) -> [ConfigNode]? {
            guard let node = node(key) else { return nil }
            guard case .sequence(let items) = node.value else {
                throw ConfigError("\(ConfigWording.name(node.path)) must be a list, not \(node.kindDescription)", at: node.location)
            }
            return items
        }

        /// The error for a required key that is missing.
        func missing(_ key: String) -> ConfigError {
            ConfigError("the pipeline needs '\(key)'", at: root.location)
        }

        /// An error about the value of `key` (or the file when it is absent).
        func error(_ message: String, key: String) -> ConfigError {
            ConfigError(message, at: pairs.first { Self.isKey($0.key, key) }?.value.location ?? root.location)
        }

        /// The first key in the file that is not in `known`, with the closest known one.
        func unknownKey(known: [String]) -> ConfigError? {
            for pair in pairs {
                guard case .scalar(let name) = pair.key.value, !known.contains(name) else { continue }
                return ConfigError(
                    "unknown key '\(name)' at the top level" + ConfigWording.suggestion(for: name, among: known), at: pair.key.location)
            }
            return nil
        }

        private static func isKey(_ node: ConfigNode, _ key: String) -> Bool {
            if case .scalar(key) = node.value { true } else { false }
        }

        private static func isNull(_ node: ConfigNode) -> Bool {
            if case .null = node.value { true } else { false }
        }
    }
}
