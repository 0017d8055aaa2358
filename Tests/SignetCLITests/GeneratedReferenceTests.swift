import Foundation
import Signet
import SignetCore
import SignetTestSupport
import Testing

/// docs/pipelines.md's reference tables and Schemas/pipeline.schema.json are generated
/// from the component registry; these tests fail when the committed files drift from it.
@Suite("Generated component reference")
struct GeneratedReferenceTests {
    static let root = FixturePaths.packageRoot
    static let catalog = ComponentCatalog(registry: Signet.makeRegistry())
    static let regenerate = "run scripts/generate-reference.sh and commit the result"

    @Test(.ownThread) func docsReferenceTablesMatchTheRegistry() throws {
        let path = Self.root.appendingPathComponent("docs/pipelines.md").path
        let committed = try String(contentsOfFile: path, encoding: .utf8)
        let generated = try #require(Self.catalog.splicingMarkdown(into: committed), "docs/pipelines.md lost its generated-region markers")
        #expect(committed == generated, "docs/pipelines.md differs from the registry: \(Self.regenerate)")
        // Not vacuous: every key of a component appears in the region.
        #expect(committed.contains("| `policy.grace_period_entitled` | bool | `true` |"))
    }

    /// docs/reason-codes.md is written by hand; each module declares its own codes. Both lists
    /// must be the same, or a dead-letter consumer meets a code it cannot look up.
    @Test func everyDeclaredReasonCodeIsDocumentedAndNoOther() {
        let declared = KnownReasonCodes.declared, documented = KnownReasonCodes.documented
        #expect(declared.subtracting(documented).sorted() == [], "declared in Sources, missing from docs/reason-codes.md")
        #expect(documented.subtracting(declared).sorted() == [], "in docs/reason-codes.md, declared nowhere")
        // Not vacuous: the codes of core, JWS, state and the http sink are all found.
        #expect(declared.isSuperset(of: ["line_too_large", "invalid_signature", "environment_conflict", "http_rejected"]))
    }

    /// Every code a pipeline component can reject or dead-letter with is declared by its spec
    /// (``ComponentSpec/rejects``), so a pipeline exports it at 0 from the start and the first
    /// one is an increase Prometheus sees (issue 53). The others are not pipeline dead letters:
    /// `signet verify`'s own verdict, and what the forward sink writes to its own file.
    @Test func everyPipelineReasonCodeIsDeclaredByASpec() {
        let registry = Signet.makeRegistry()
        let specs = registry.catalog.flatMap(\.specs)
        let declaredBySpecs = Set(specs.flatMap(\.rejects).map(\.rawValue))
        let notPipelineDeadLetters: Set<String> = ["revocation_unavailable", "forward_refused", "forward_expired"]
        #expect(KnownReasonCodes.declared.subtracting(notPipelineDeadLetters).subtracting(declaredBySpecs).sorted() == [])
        #expect(declaredBySpecs.isSubset(of: KnownReasonCodes.declared), "\(declaredBySpecs.subtracting(KnownReasonCodes.declared))")
    }

    @Test(.ownThread) func pipelineSchemaMatchesTheRegistry() throws {
        let path = Self.root.appendingPathComponent("Schemas/pipeline.schema.json").path
        let committed = try String(contentsOfFile: path, encoding: .utf8)
        #expect(committed == Self.catalog.jsonSchema.prettyText, "Schemas/pipeline.schema.json differs from the registry: \(Self.regenerate)")
    }

    /// `signet components --json` names every key of every registered component.
    @Test(.ownThread) func componentsJSONListsEveryKeyOfEveryComponent() throws {
        let result = try CLI.run(["components", "--json"])
        #expect(result.exitCode == 0, "\(CLI.describe(result))")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(result.stdoutText.utf8)) as? [String: Any])
        #expect(document["version"] as? Int == 1)
        let registry = Signet.makeRegistry()
        for (kind, specs) in registry.catalog {
            let listed = try #require(document[kind.plural] as? [[String: Any]], "no \(kind.plural)")
            #expect(listed.compactMap { $0["name"] as? String } == specs.map(\.name))
            for (spec, entry) in zip(specs, listed) {
                let fields = try #require(entry["fields"] as? [[String: Any]])
                #expect(Set(fields.compactMap { $0["name"] as? String }) == Set(spec.fields.map(\.name)), "\(kind) \(spec.name)")
            }
        }
        let verify = try #require((document["stages"] as? [[String: Any]])?.first { $0["name"] as? String == "verify" })
        let environment = try #require((verify["fields"] as? [[String: Any]])?.first { $0["name"] as? String == "environment" })
        #expect(environment["type"] as? String == "string_list", "one environment or several")
        #expect(environment["required"] as? Bool == true)
        #expect(environment["values"] as? [String] == ["Production", "Sandbox", "Xcode", "LocalTesting"])
        let plain = try CLI.run(["components"])
        // Columns are as wide as the component's longest key (`revocation.retry_timeout` for verify): compared space-collapsed.
        let collapsed = plain.stdoutText.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
        #expect(collapsed.contains("max_future_skew duration 0s...1d, default: 5m"), "\(plain.stdoutText)")
    }

    /// The schema takes `${VAR}` in typed keys (values are typed after interpolation)
    /// and still rejects wrong types, unknown keys and unknown component types.
    @Test(.ownThread) func schemaAcceptsInterpolationAndRejectsMistakes() throws {
        guard Python.canImport(["jsonschema", "yaml"]) else {
            print("skipped: python3 with jsonschema and yaml is not installed")
            return
        }
        let script = """
            import json, sys, yaml, jsonschema
            schema = json.load(open(sys.argv[1]))
            ok = yaml.safe_load(sys.argv[2])
            jsonschema.validate(ok, schema)
            failures = 0
            for text in sys.argv[3:]:
                try:
                    jsonschema.validate(yaml.safe_load(text), schema)
                    print("accepted:", text)
                except jsonschema.ValidationError:
                    failures += 1
            print("rejected", failures)
            """
        let base = "sinks: {out: {type: stdout}}\ndead_letter: {type: stdout}\n"
        let good = base + """
            source: {type: stdin, max_line_bytes: "${MAX:1048576}"}
            stores: {main: {type: sqlite, path: x.sqlite, busy_timeout: 5s}}
            stages:
              - {type: decode}
              - {type: verify, environment: "${ENV}", bundle_id: com.example, workers: "${W:0}", max_future_skew: 5m}
              - {type: transition, store: main, policy: {billing_retry_entitled: "${B:false}"}}
            settings: {batch_size: 10, progress_interval: "${P:0s}"}
            """
        let bad = [
            base + "source: {type: stdin, max_line_bytes: lots}",
            base + "source: {type: stdin, max_line_byte: 5}",
            base + "source: {type: stdinn}",
            base + "source: {type: stdin}\nstages: [{type: verify, environment: Sandbx, bundle_id: x}]",
            base + "source: {type: stdin}\nsettings: {progress_interval: 100}",
            base + "source: {type: stdin}\nstores: {main: {type: sqlite, database: x}}",
        ]
        let result = try Python.run(script, arguments: [Self.root.appendingPathComponent("Schemas/pipeline.schema.json").path, good] + bad)
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("rejected \(bad.count)"), "\(result.output)")
    }

    /// The YAML examples in the specs (shown in the docs) are valid for their own spec.
    @Test(.ownThread) func everySpecExampleValidatesAgainstItsSpec() throws {
        var checked = 0
        for (kind, specs) in Signet.makeRegistry().catalog {
            for spec in specs {
                for example in spec.examples {
                    let root = try ConfigNode.parse(yaml: example, file: "\(spec.name) example", environment: [:])
                    let candidates: [ConfigNode] =
                        switch kind {
                        case .source: Self.children(of: root, "source").map { [$0] } ?? []
                        case .stage: Self.items(Self.children(of: root, "stages"))
                        case .sink: Self.values(Self.children(of: root, "sinks"))
                        case .store: Self.values(Self.children(of: root, "stores"))
                        case .section: Self.children(of: root, spec.name).map { [$0] } ?? []
                        }
                    let mine = candidates.filter { Self.type(of: $0) == spec.name || kind == .section }
                    #expect(!mine.isEmpty, "the \(kind) \(spec.name) example does not show it")
                    for node in mine {
                        #expect(throws: Never.self, "\(kind) \(spec.name) example") { _ = try spec.parse(node) }
                        checked += 1
                    }
                }
            }
        }
        #expect(checked >= 8)
    }

    static func children(of node: ConfigNode, _ key: String) -> ConfigNode? {
        guard case .mapping(let pairs) = node.value else { return nil }
        return pairs.first { if case .scalar(key) = $0.key.value { true } else { false } }?.value
    }

    static func items(_ node: ConfigNode?) -> [ConfigNode] {
        if case .sequence(let items)? = node?.value { return items }
        return []
    }

    static func values(_ node: ConfigNode?) -> [ConfigNode] {
        if case .mapping(let pairs)? = node?.value { return pairs.map(\.value) }
        return []
    }

    static func type(of node: ConfigNode) -> String? {
        if case .scalar(let type)? = children(of: node, "type")?.value { return type }
        return nil
    }
}
