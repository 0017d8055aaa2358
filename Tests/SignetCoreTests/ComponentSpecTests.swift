import Foundation
import Logging
import Synchronization
import Testing
import SignetTestSupport

@testable import SignetCore

/// A resource that records when it is opened and closed, with a configurable identity.
final class RecordingResource: PipelineResource {
    let log: EventLog
    let name: String
    let identity: String?
    init(name: String, identity: String?, log: EventLog) {
        self.name = name
        self.identity = identity
        self.log = log
    }
    func open() async throws { log.append("open \(name)") }
    func close() async throws { log.append("close \(name)") }
}

/// A stage that holds the resource its `store:` names and logs its own lifecycle.
struct ResourceUsingStage: Stage {
    let name = "keeper"
    let resource: RecordingResource
    let log: EventLog
    func open() async throws { log.append("open stage") }
    func close() async throws { log.append("close stage") }
    func process(_ batch: inout RecordBatch) async throws {}
}

/// Registry with spec'd test components: a `claims` stage with every field type, a
/// `keeper` stage that uses a store, `file`/`memo` stores and an `http` section.
func specRegistry(log: EventLog = EventLog()) -> ComponentRegistry {
    var registry = coreRegistry()
    registry.registerStage(ComponentSpec(
        name: "claims", summary: "test stage with every field type",
        fields: [
            ConfigField("bundle_id", .string, .required, "bundle"),
            ConfigField("environment", .enumeration(["Production", "Sandbox"]), .default("Sandbox"), "env"),
            ConfigField("workers", .int(0...64), .default("0"), "threads"),
            ConfigField("skew", .duration(.zero...(.seconds(3600))), .default("5m"), "skew"),
            ConfigField("strict", .bool, .default("false"), "strict"),
            ConfigField("roots", .stringList(allowed: nil), .default("apple"), "roots"),
            ConfigField("kinds", .stringList(allowed: ["a", "b"]), .optional, "kinds"),
            ConfigField("properties", .stringMap, .optional, "free-form"),
            ConfigField("policy", .object([ConfigField("grace", .bool, .default("true"), "grace")]), .optional, "policy"),
            ConfigField("routes", .objectList([ConfigField("sinks", .stringList(allowed: nil), .required, "sinks")]), .optional, "routes"),
            ConfigField("durations", .map(.duration(nil)), .optional, "per product"),
        ],
        retiredKeys: ["database": "moved to stores:"])
    ) { config, _ in
        // Everything typed, defaults filled: the factory restates nothing.
        _ = try config.string("bundle_id")
        _ = try config.string("environment")
        _ = try config.int("workers")
        _ = try config.duration("skew")
        _ = try config.bool("strict")
        _ = try config.stringList("roots")
        return NamedNoopStage(name: "claims")
    }
    registry.registerStage(ComponentSpec(
        name: "keeper", summary: "needs claims before it",
        fields: [ConfigField("store", .storeName, .default("default"), "store")], requiresBefore: ["claims"])
    ) { config, context in
        ResourceUsingStage(resource: try context.resource(named: config.string("store"), as: RecordingResource.self), log: log)
    }
    registry.registerStore(ComponentSpec(
        name: "file", summary: "a file-backed test store",
        fields: [ConfigField("path", .string, .default("data/x.db"), "path"), ConfigField("mode", .enumeration(["fast", "safe"]), .default("safe"), "mode")],
        testSubstitute: "memo")
    ) { config, context in
        RecordingResource(name: context.path, identity: "file:" + (try config.string("path")), log: log)
    }
    registry.registerStore(ComponentSpec(name: "memo", summary: "in memory")) { _, context in
        RecordingResource(name: context.path + " (memo)", identity: nil, log: log)
    }
    registry.defaultStoreType = "file"
    registry.registerSection(ComponentSpec(
        name: "http", summary: "service endpoints",
        fields: [ConfigField("listen", .string, .default("127.0.0.1:8080"), "address"), ConfigField("timeout", .duration(nil), .default("5s"), "t")]))
    return registry
}

let specBase = """
    source: { type: stdin }
    sinks: { out: { type: stdout } }
    dead_letter: { type: stdout }

    """

@Suite("Component specs")
struct ComponentSpecTests {
    func load(_ yaml: String, registry: ComponentRegistry = specRegistry(), substitute: Bool = false) throws(ConfigErrors) -> Pipeline {
        var loader = PipelineLoader(registry: registry, environment: [:])
        loader.substitutesTestStores = substitute
        return try loader.load(yaml: specBase + yaml, file: "p.yaml")
    }

    func errors(_ yaml: String, registry: ComponentRegistry = specRegistry()) -> [ConfigError] {
        loadErrors(specBase + yaml, registry: registry)
    }

    @Test func defaultsComeFromTheSpecAndTypedValuesReachTheFactory() throws {
        let registry = specRegistry()
        let node = try parseNode("bundle_id: com.example\nworkers: 4\nskew: 90s\nkinds: a,b\npolicy: {}\ndurations: {monthly: 31d}\n")
        let parsed = try #require(registry.stages["claims"]).spec.parse(node)
        #expect(try parsed.string("environment") == "Sandbox")
        #expect(!parsed.contains("environment") && parsed.contains("workers"))
        #expect(try parsed.int("workers") == 4)
        #expect(try parsed.duration("skew") == .seconds(90))
        #expect(try parsed.stringList("roots") == ["apple"])
        #expect(try parsed.stringList("kinds") == ["a", "b"])
        #expect(try parsed.object("policy")?.bool("grace") == true)
        let durations = try parsed.map("durations")
        #expect(durations.map(\.name) == ["monthly"])
        if case .duration(let value) = durations.first?.value { #expect(value == .seconds(31 * 86_400)) } else { Issue.record("not a duration") }
        // An absent optional object still yields its defaults.
        let bare = try #require(registry.stages["claims"]).spec.parse(try parseNode("bundle_id: x\n"))
        #expect(try bare.object("policy")?.bool("grace") == true)
        // Asking for an undeclared key is an error, not a crash.
        #expect(throws: ConfigError.self) { try bare.int("bundle_id") }
    }

    @Test func everyKindOfMistakeIsReportedAtItsPosition() {
        let found = errors("""
            stages:
              - type: claims
                bundle_id: x
                environment: Sandbx
                workers: 65
                skew: 100
                strict: maybe
                kinds: [a, c]
                routes: [{sinks: [out], colour: red}]
                durations: {monthly: 31}
            """)
        let expected: [(line: Int, text: String)] = [
            (7, "'Sandbx' is not a valid environment; expected one of: Production, Sandbox (did you mean 'Sandbox'?)"),
            (8, "'stages[0].workers' must be between 0 and 64, got 65"),
            (9, "'stages[0].skew' must be a duration (a unit is required: write 100ms or 100s), got '100'"),
            (10, "'stages[0].strict' must be true or false, got 'maybe'"),
            (11, "'c' is not allowed in 'stages[0].kinds'; expected one of: a, b"),
            (12, "unknown key 'colour' in 'stages[0].routes[0]'"),
            (13, "'stages[0].durations.monthly' must be a duration (a unit is required: write 31ms or 31s), got '31'"),
        ]
        #expect(found.map(\.message) == expected.map(\.text))
        #expect(found.map { $0.location?.line } == expected.map(\.line))
    }

    @Test func aMissingRequiredKeyPointsAtItsMisspelling() {
        let found = errors("stages:\n  - type: claims\n    bundel_id: com.example\n")
        #expect(found.count == 2)
        #expect(found.contains { $0.message == "unknown key 'bundel_id' in 'stages[0]' (did you mean 'bundle_id'?)" && $0.location?.line == 6 })
        #expect(found.contains {
            $0.message == "'stages[0]' needs 'bundle_id' ('bundel_id' at 6:5 looks like a misspelling of it)" && $0.location?.line == 5
        })
    }

    @Test func retiredKeysSayWhereTheyWent() {
        let found = errors("stages:\n  - type: claims\n    bundle_id: x\n    database: a.db\n")
        #expect(found.map(\.message) == ["unknown key 'database' in 'stages[0]': moved to stores:"])
    }

    @Test func stageOrderIsChecked() {
        let after = errors("stages:\n  - type: keeper\n  - {type: claims, bundle_id: x}\n")
        #expect(after.map(\.message) == ["stage 'keeper' must come after 'claims' (stages[1]): it uses what 'claims' adds"])
        #expect(after.first?.location?.line == 5)
        let missing = errors("stages:\n  - type: keeper\n")
        #expect(missing.map(\.message) == ["stage 'keeper' needs a 'claims' stage before it"])
        // An unknown type elsewhere leaves the order alone (it may be the missing stage, misspelt).
        let misspelt = errors("stages:\n  - type: claimz\n  - type: keeper\n")
        #expect(misspelt.count == 1 && misspelt[0].message.contains("unknown stage type 'claimz'"))
    }

    @Test func theImplicitDefaultStoreIsBuiltAndOpenedBeforeAndClosedAfterTheStages() async throws {
        let log = EventLog()
        var pipeline = try load("stages:\n  - {type: claims, bundle_id: x}\n  - type: keeper\n", registry: specRegistry(log: log))
        #expect(pipeline.resources.map(\.name) == ["default"])
        #expect(pipeline.resources.map(\.type) == ["file"])
        let keeper = try #require(pipeline.stages.last as? ResourceUsingStage)
        #expect(keeper.resource === pipeline.resources[0].resource as? RecordingResource)
        pipeline.source = MemorySource(lines: [])
        try await PipelineRunner(pipeline: pipeline).run()
        #expect(log.events == ["open stores.default", "open stage", "close stage", "close stores.default"])
    }

    @Test func declaredStoresAreNamedAndUnknownNamesSuggestOne() throws {
        let pipeline = try load("""
            stores:
              main: { type: file, path: a.db, mode: fast }
            stages:
              - {type: claims, bundle_id: x}
              - {type: keeper, store: main}
            """)
        #expect(pipeline.resources.map(\.name) == ["main"])
        let found = errors("""
            stores:
              main: { type: file, path: a.db }
            stages:
              - {type: claims, bundle_id: x}
              - {type: keeper, store: mian}
            """)
        #expect(found.map(\.message) == ["unknown store 'mian' (the pipeline's stores: main, default) (did you mean 'main'?)"])
        #expect(found.first?.location?.line == 8)
    }

    @Test func twoStoresOpeningOneDatabaseAreAnError() {
        let found = errors("""
            stores:
              a: { type: file, path: same.db, mode: fast }
              b: { type: file, path: same.db, mode: safe }
            """)
        #expect(found.map(\.message) == [
            "stores 'a' and 'b' both open file:same.db; declare it once under 'stores:' and name that store from every stage that uses it",
        ])
        #expect(found.first?.location?.line == 6)
        // The implicit default counts too: a declared store at its path conflicts with it.
        let implicit = errors("""
            stores:
              main: { type: file, path: data/x.db }
            stages:
              - {type: claims, bundle_id: x}
              - type: keeper
            """)
        #expect(implicit.count == 1 && implicit[0].message.contains("stores 'main' and 'default' both open file:data/x.db"))
    }

    @Test func testModeSubstitutesStoresButStillChecksTheirOptions() throws {
        let pipeline = try load(
            "stores:\n  main: { type: file, path: a.db }\nstages:\n  - {type: claims, bundle_id: x}\n  - {type: keeper, store: main}\n",
            substitute: true)
        #expect(pipeline.resources.map(\.type) == ["memo"])
        let found = errors("stores:\n  main: { type: file, mode: turbo }\n")
        #expect(found.count == 1 && found[0].message.contains("'turbo' is not a valid mode"))
    }

    @Test func aBrokenStoreIsReportedOnceNotAgainByItsUsers() {
        let found = errors("stores:\n  main: { type: file, mode: turbo }\nstages:\n  - {type: claims, bundle_id: x}\n  - {type: keeper, store: main}\n")
        #expect(found.map(\.message) == ["'turbo' is not a valid mode; expected one of: fast, safe"])
    }

    @Test func registeredSectionsAreValidatedAndKept() throws {
        let pipeline = try load("http:\n  listen: 0.0.0.0:9000\n")
        let http = try #require(pipeline.sections["http"])
        #expect(try http.string("listen") == "0.0.0.0:9000")
        #expect(try http.duration("timeout") == .seconds(5))
        #expect(pipeline.sections["settings"] == nil)
        let found = errors("http:\n  listn: x\n  timeout: 5\n")
        #expect(found.map(\.message) == [
            "unknown key 'listn' in 'http' (did you mean 'listen'?)",
            "'http.timeout' must be a duration (a unit is required: write 5ms or 5s), got '5'",
        ])
        #expect(pipeline.sections.count == 1)
    }

    /// An unset ${VAR} is a lint warning whatever the key's type: its stand-in never
    /// fails an int, duration, enum or store-name check.
    @Test func unsetVariablesInTypedKeysAreWarningsNotErrors() {
        let loader = PipelineLoader(registry: specRegistry(), environment: [:])
        let report = loader.lint(yaml: specBase + """
            stages:
              - type: claims
                bundle_id: ${BUNDLE}
                environment: ${ENVIRONMENT}
                workers: ${WORKERS}
                skew: ${SKEW}
                strict: ${STRICT}
              - type: keeper
                store: ${STORE}
            settings: { batch_size: "${BATCH}" }
            """, file: "p.yaml")
        #expect(report.errors.map(\.description) == [])
        #expect(report.pipeline != nil)
        #expect(report.unsetVariables.map(\.name) == ["BUNDLE", "ENVIRONMENT", "WORKERS", "SKEW", "STRICT", "STORE", "BATCH"])
        // A set variable with a wrong value is still an error.
        let set = PipelineLoader(registry: specRegistry(), environment: ["WORKERS": "many"])
            .lint(yaml: specBase + "stages:\n  - {type: claims, bundle_id: x, workers: \"${WORKERS}\"}\n", file: "p.yaml")
        #expect(set.errors.map(\.message) == ["'stages[0].workers' must be an integer, got 'many'"])
    }

    @Test func durationsFormatAndParse() {
        #expect(ConfigDuration.format(.milliseconds(1500)) == "1500ms")
        #expect(ConfigDuration.format(.seconds(300)) == "5m")
        #expect(ConfigDuration.format(.seconds(30 * 86_400)) == "30d")
        #expect(ConfigDuration.format(.zero) == "0s")
        #expect(ConfigDuration.parse("100") == .failure(.missingUnit("100")))
        #expect(ConfigDuration.parse("1e300s") == .failure(.invalid))
        #expect(ConfigDuration.parse("2h") == .success(.seconds(7200)))
    }
}
