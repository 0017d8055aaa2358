import Foundation
import Synchronization
import Testing
import SignetTestSupport

@testable import SignetCore

// MARK: - Temp files

/// A fresh directory under the system temp dir; call `remove()` when done.
struct CoreTempDir {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory
            .appendingPathComponent("signet-core-tests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    @discardableResult
    func write(_ name: String, bytes: [UInt8]) throws -> String {
        let file = path(name)
        try Data(bytes).write(to: URL(fileURLWithPath: file))
        return file
    }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String { try write(name, bytes: Array(text.utf8)) }

    func read(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path(name)))) }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

// MARK: - Config helpers

func coreRegistry() -> ComponentRegistry {
    var registry = ComponentRegistry()
    registry.registerCoreComponents()
    return registry
}

/// Loads YAML expecting failure; returns the errors (records an issue when it loads).
func loadErrors(
    _ yaml: String, registry: ComponentRegistry = coreRegistry(), environment: [String: String] = [:],
    sourceLocation: SourceLocation = #_sourceLocation
) -> [ConfigError] {
    do {
        _ = try PipelineLoader(registry: registry, environment: environment).load(yaml: yaml, file: "p.yaml")
        Issue.record("expected the pipeline to be rejected", sourceLocation: sourceLocation)
        return []
    } catch {
        return error.errors
    }
}

func parseNode(_ yaml: String, environment: [String: String] = [:]) throws(ConfigError) -> ConfigNode {
    try ConfigNode.parse(yaml: yaml, file: "c.yaml", environment: environment)
}

/// The child value node for a dotted key path of mappings.
func child(_ node: ConfigNode, _ path: String) -> ConfigNode? {
    var current = node
    for component in path.split(separator: ".") {
        guard case .mapping(let pairs) = current.value,
            let pair = pairs.first(where: { if case .scalar(String(component)) = $0.key.value { true } else { false } })
        else { return nil }
        current = pair.value
    }
    return current
}

func scalar(_ node: ConfigNode?) -> String? {
    if case .scalar(let text)? = node?.value { return text }
    return nil
}

func isNull(_ node: ConfigNode?) -> Bool {
    if case .null? = node?.value { return true }
    return false
}

func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

/// Settings for fast tests: no progress task, quick give-up on failing sinks unless asked otherwise.
func testSettings(batchSize: Int = 256, sinkRetryTimeout: Duration = .seconds(60)) -> PipelineSettings {
    var settings = PipelineSettings()
    settings.batchSize = batchSize
    settings.progressInterval = nil
    settings.sinkRetryTimeout = sinkRetryTimeout
    return settings
}
