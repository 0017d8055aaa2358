import Foundation
import Logging
import Testing
import SignetTestSupport

@testable import SignetCore

/// A do-nothing stage registered as `decode`/`verify` so YAML files can name stages.
struct NamedNoopStage: Stage {
    var name: String
    func process(_ batch: inout RecordBatch) async throws {}
}

func registryWithStages() -> ComponentRegistry {
    var registry = coreRegistry()
    for name in ["decode", "verify", "dedupe"] {
        let spec = ComponentSpec(name: name, summary: "test", fields: [ConfigField("bundle_id", .string, .optional, "ignored")])
        registry.registerStage(spec) { config, _ in
            _ = try config.optionalString("bundle_id")
            return NamedNoopStage(name: name)
        }
    }
    return registry
}

let validPipeline = """
    description: test pipeline
    source:
      type: file
      path: /tmp/in.ndjson
      max_line_bytes: 4096
      skip_blank_lines: false
      checkpoint: /tmp/in.checkpoint
    stages:
      - type: decode
      - type: verify
        bundle_id: com.example
    sinks:
      out:
        type: stdout
      archive:
        type: file
        path: /tmp/archive.ndjson
        fsync: false
    dead_letter:
      type: file
      path: /tmp/dead.ndjson
      format: raw
      max_input_bytes: 1024
    settings:
      batch_size: 32
      progress_interval: 500ms
      sink_retry_timeout: 5s
      shutdown_timeout: 10m

    """

@Suite("PipelineLoader")
struct PipelineLoaderTests {
    @Test func loadsAFullPipeline() throws {
        let pipeline = try PipelineLoader(registry: registryWithStages(), environment: [:])
            .load(yaml: validPipeline, file: "p.yaml")
        let source = try #require(pipeline.source as? LineSource)
        #expect(source.stream == "/tmp/in.ndjson")
        #expect(pipeline.stages.map(\.name) == ["decode", "verify"])
        #expect(pipeline.sinks.map(\.name) == ["out", "archive"])
        #expect(pipeline.sinks[0].sink is StdoutSink)
        let archive = try #require(pipeline.sinks[1].sink as? FileSink)
        #expect(archive.path == "/tmp/archive.ndjson")
        #expect(archive.fsync == false)
        let dead = try #require(pipeline.deadLetter.sink as? FileSink)
        #expect(dead.path == "/tmp/dead.ndjson")
        #expect(dead.fsync == true)
        #expect(pipeline.deadLetter.format == .raw)
        #expect(pipeline.deadLetter.maxInputBytes == 1024)
        #expect(pipeline.settings.batchSize == 32)
        #expect(pipeline.settings.progressInterval == .milliseconds(500))
        #expect(pipeline.settings.sinkRetryTimeout == .seconds(5))
        #expect(pipeline.settings.shutdownTimeout == .seconds(600))
    }

    @Test func defaultsWhenSettingsAreAbsent() throws {
        let yaml = """
            source: { type: stdin }
            sinks: { out: { type: stdout } }
            dead_letter: { type: file, path: dead.ndjson }
            """
        let pipeline = try PipelineLoader(registry: coreRegistry(), environment: [:]).load(yaml: yaml, file: "p.yaml")
        #expect(pipeline.settings == PipelineSettings())
        #expect(pipeline.deadLetter.format == .json)
        #expect(pipeline.deadLetter.maxInputBytes == 1 << 20)
        #expect(pipeline.stages.isEmpty)
        #expect((pipeline.source as? LineSource)?.stream == "stdin")
    }

    @Test func zeroProgressIntervalDisablesProgress() throws {
        let yaml = """
            source: { type: stdin }
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            settings: { progress_interval: 0s }
            """
        let pipeline = try PipelineLoader(registry: coreRegistry(), environment: [:]).load(yaml: yaml, file: "p.yaml")
        #expect(pipeline.settings.progressInterval == nil)
    }

    @Test func interpolatesFromTheLoadersEnvironment() throws {
        let yaml = """
            source: { type: file, path: "${IN}", max_line_bytes: "${MAX:2048}" }
            sinks: { out: { type: file, path: "${OUT_DIR:/tmp}/out.ndjson" } }
            dead_letter: { type: file, path: dead.ndjson }
            settings: { batch_size: "${BATCH}" }
            """
        let pipeline = try PipelineLoader(registry: coreRegistry(), environment: ["IN": "/data/in.ndjson", "BATCH": "7"])
            .load(yaml: yaml, file: "p.yaml")
        #expect((pipeline.source as? LineSource)?.stream == "/data/in.ndjson")
        #expect((pipeline.sinks[0].sink as? FileSink)?.path == "/tmp/out.ndjson")
        #expect(pipeline.settings.batchSize == 7)
    }

    @Test func loadsFromAFileAndReportsUnreadableFiles() throws {
        let dir = try CoreTempDir()
        defer { dir.remove() }
        let file = try dir.write("p.yaml", "source: { type: stdin }\nsinks: { o: { type: stdout } }\ndead_letter: { type: stdout }\n")
        let loader = PipelineLoader(registry: coreRegistry(), environment: [:])
        _ = try loader.load(file: file)
        do {
            _ = try loader.load(file: dir.path("missing.yaml"))
            Issue.record("expected an error")
        } catch {
            #expect(error.errors.count == 1)
            #expect(error.errors[0].message.contains("cannot read pipeline file"))
        }
    }

    @Test func unknownTopLevelKeyWithSuggestion() {
        let errors = loadErrors("""
            source: { type: stdin }
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            stagse: []
            """)
        #expect(errors.count == 1)
        #expect(errors.first?.message == "unknown key 'stagse' at the top level (did you mean 'stages'?)")
        #expect(errors.first?.location == ConfigLocation(file: "p.yaml", line: 4, column: 1))
    }

    @Test func unknownKeyInsideAComponentWithSuggestion() {
        let errors = loadErrors("""
            source:
              type: file
              path: in.ndjson
              max_line_byte: 2048
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """)
        #expect(errors.count == 1)
        #expect(errors.first?.message == "unknown key 'max_line_byte' in 'source' (did you mean 'max_line_bytes'?)")
        #expect(errors.first?.location == ConfigLocation(file: "p.yaml", line: 4, column: 3))
    }

    @Test func unknownKeyInsideACustomStage() {
        let errors = loadErrors("""
            source: { type: stdin }
            stages:
              - type: verify
                bundle_idd: x
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """, registry: registryWithStages())
        #expect(errors.count == 1)
        #expect(errors.first?.message == "unknown key 'bundle_idd' in 'stages[0]' (did you mean 'bundle_id'?)")
        #expect(errors.first?.location?.line == 4)
        #expect(errors.first?.location?.column == 5)
    }

    @Test func wrongTypes() {
        let errors = loadErrors("""
            source: [stdin]
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            settings:
              batch_size: lots
            """)
        #expect(errors.map(\.message) == [
            "'source' must be a mapping, not a list",
            "'settings.batch_size' must be an integer, got 'lots'",
        ])
        #expect(errors.map { $0.location?.line } == [1, 5])
        #expect(errors.last?.location?.column == 15)
    }

    @Test func sinksMustBeAMappingNotAList() {
        let errors = loadErrors("""
            source: { type: stdin }
            sinks:
              - type: stdout
            dead_letter: { type: stdout }
            """)
        #expect(errors.count == 1)
        #expect(errors.first?.message == "'sinks' must be a mapping, not a list")
        #expect(errors.first?.location?.line == 3)
    }

    @Test func outOfRangeInts() {
        let errors = loadErrors("""
            source: { type: stdin, max_line_bytes: 10 }
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout, max_input_bytes: 1 }
            settings: { batch_size: 0 }
            """)
        #expect(errors.count == 3)
        #expect(errors.map { $0.location?.line } == [1, 3, 4])
        #expect(errors[0].message.contains("'source.max_line_bytes' must be between 1024 and"))
        #expect(errors[1].message.contains("'dead_letter.max_input_bytes' must be between 64 and"))
        #expect(errors[2].message == "'settings.batch_size' must be between 1 and 100000, got 0")
    }

    @Test func badDurationAndUnknownSetting() {
        let errors = loadErrors("""
            source: { type: stdin }
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            settings:
              sink_retry_timeout: soon
            """)
        #expect(errors.count == 1)
        #expect(errors.first?.message.contains("'settings.sink_retry_timeout' must be a duration") == true)
        #expect(errors.first?.location == ConfigLocation(file: "p.yaml", line: 5, column: 23))

        let unknown = loadErrors("""
            source: { type: stdin }
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            settings:
              batch_sise: 3
            """)
        #expect(unknown.first?.message == "unknown key 'batch_sise' in 'settings' (did you mean 'batch_size'?)")
    }

    @Test func yamlSyntaxErrorHasLineAndColumn() {
        let errors = loadErrors("""
            source:
              type: stdin
            sinks: { out: { type: stdout }
            dead_letter: { type: stdout }
            """)
        #expect(errors.count == 1)
        let error = errors.first
        #expect(error?.message.hasPrefix("invalid YAML") == true)
        #expect(error?.location?.file == "p.yaml")
        #expect((error?.location?.line ?? 0) >= 3)
        #expect((error?.location?.column ?? 0) >= 1)
    }

    @Test func badIndentationIsASyntaxError() {
        let errors = loadErrors("source:\n  type: stdin\n bad: 1\n")
        #expect(errors.count == 1)
        #expect(errors.first?.message.hasPrefix("invalid YAML") == true)
        #expect(errors.first?.location?.line == 3)
        #expect(errors.first?.location?.column == 2)
    }

    @Test func duplicateKeysAreReportedAtTheKey() {
        let errors = loadErrors("""
            source: { type: stdin }
            sinks:
              out: { type: stdout }
              out: { type: file, path: x }
            dead_letter: { type: stdout }
            """)
        #expect(errors.count == 1)
        #expect(errors.first?.message.contains("duplicate key 'out'") == true)
        // One of the two `out` keys (Yams reports the first occurrence).
        #expect([3, 4].contains(errors.first?.location?.line ?? 0))
        #expect(errors.first?.location?.column == 3)
    }

    @Test func unknownComponentTypesWithSuggestions() {
        let errors = loadErrors("""
            source: { type: stdn }
            stages:
              - type: decod
              - type: verify
              - { type: zzzzzzzzzzzz }
            sinks:
              out: { type: stdot }
            dead_letter: { type: fiel, path: x }
            """, registry: registryWithStages())
        #expect(errors.count == 5)
        #expect(errors.map { $0.location?.line } == [1, 3, 5, 7, 8])
        #expect(errors[0].message == "unknown source type 'stdn'; known: file, stdin (did you mean 'stdin'?)")
        #expect(errors[0].location?.column == 17)
        #expect(errors[1].message == "unknown stage type 'decod'; known: decode, dedupe, verify (did you mean 'decode'?)")
        #expect(errors[1].location?.column == 11)
        #expect(!errors[2].message.contains("did you mean"))
        #expect(errors[3].message.contains("unknown sink type 'stdot'"))
        #expect(errors[3].message.contains("did you mean 'stdout'?"))
        #expect(errors[4].message.contains("did you mean 'file'?"))
    }

    @Test func componentWithoutType() {
        let errors = loadErrors("""
            source: { path: x }
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """)
        #expect(errors.count == 1)
        #expect(errors.first?.message.contains("'source' needs 'type'") == true)
        #expect(errors.first?.location?.line == 1)
    }

    @Test func missingSourceSinksAndDeadLetter() {
        let errors = loadErrors("description: nothing here\n")
        #expect(errors.count == 3)
        let messages = errors.map(\.message)
        #expect(messages.contains("the pipeline needs 'source'"))
        #expect(messages.contains("the pipeline needs 'sinks'"))
        #expect(messages.contains { $0.contains("the pipeline needs 'dead_letter'") })
        #expect(errors.allSatisfy { $0.location?.file == "p.yaml" })
    }

    @Test func emptySinksMappingIsAnError() {
        let errors = loadErrors("""
            source: { type: stdin }
            sinks: {}
            dead_letter: { type: stdout }
            """)
        #expect(errors.map(\.message) == ["'sinks' needs at least one sink"])
        #expect(errors.first?.location?.line == 2)
    }

    @Test func nullSinksIsAnError() {
        // Regression: `sinks:` with no value once built a pipeline that silently discarded every output.
        let errors = loadErrors("""
            source: { type: stdin }
            sinks:
            dead_letter: { type: stdout }
            """)
        #expect(errors.count == 1)
        #expect(errors.first?.message.contains("sink") == true)
    }

    @Test func severalErrorsAtOnceSortedByLine() {
        let errors = loadErrors("""
            settings:
              batch_size: -1
            dead_letter: { type: file }
            stages:
              - type: nope
            source:
              type: file
              path: x
              colour: blue
            sinks:
              out: { type: file, path: y, fsync: sometimes }
            extra: 1
            """, registry: registryWithStages())
        #expect(errors.count == 6)
        let lines = errors.map { $0.location?.line ?? 0 }
        #expect(lines == lines.sorted())
        #expect(lines == [2, 3, 5, 9, 11, 12])
        #expect(errors[1].message == "'dead_letter' needs 'path'")
        #expect(errors[3].message.contains("unknown key 'colour' in 'source'"))
        #expect(errors[4].message.contains("'sinks.out.fsync' must be true or false"))
        #expect(errors[5].message.contains("unknown key 'extra' at the top level"))
    }

    @Test func factoryErrorsOfTheirOwnAreWrappedWithTheComponentLocation() {
        var registry = coreRegistry()
        registry.registerStage(ComponentSpec(name: "explode", summary: "fails")) { _, _ in throw TestFailure("certificate does not parse") }
        let errors = loadErrors("""
            source: { type: stdin }
            stages:
              - type: explode
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """, registry: registry)
        #expect(errors.count == 1)
        #expect(errors.first?.message == "stage 'explode': certificate does not parse")
        #expect(errors.first?.location?.line == 3)
    }

    /// A stage that relies on a later `publisher` stage, as `verify` without its document does.
    struct NeedsAPublisher: Stage {
        let name = "needs_publisher"
        func process(_ batch: inout RecordBatch) async throws {}
        func checkPlacement(_ placement: StagePlacement) throws(PipelineWiringError) {
            guard !placement.laterStages.contains(where: { $0.name == "publisher" }) else { return }
            throw PipelineWiringError(stage: name, index: placement.index, message: "needs a publisher after it")
        }
    }

    @Test func aStageItsNeighboursDoNotServeIsRefusedAtItsLine() throws {
        var registry = coreRegistry()
        registry.registerStage(ComponentSpec(name: "needs_publisher", summary: "relies on a publisher")) { _, _ in NeedsAPublisher() }
        registry.registerStage(ComponentSpec(name: "publisher", summary: "publishes")) { _, _ in NamedNoopStage(name: "publisher") }
        let errors = loadErrors("""
            source: { type: stdin }
            stages:
              - type: publisher
              - type: needs_publisher
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """, registry: registry)
        #expect(errors.count == 1)
        #expect(errors.first?.message == "'stages[1]' (needs_publisher): needs a publisher after it")
        #expect(errors.first?.location?.line == 4)
        let pipeline = try PipelineLoader(registry: registry, environment: [:]).load(yaml: """
            source: { type: stdin }
            stages:
              - type: needs_publisher
              - type: publisher
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """, file: "p.yaml")
        #expect(pipeline.stages.map(\.name) == ["needs_publisher", "publisher"])
    }

    @Test func factoriesSeeTheirPathAndTheSinkNames() throws {
        var registry = coreRegistry()
        let seen = EventLog()
        let route = ComponentSpec(name: "route", summary: "routing", fields: [ConfigField("to", .string, .required, "the sink")])
        registry.registerStage(route) { config, context in
            let target = try config.string("to")
            seen.append("\(context.path) \(context.sinkNames.joined(separator: ","))")
            guard context.sinkNames.contains(target) else {
                throw config.error("no sink named '\(target)'", key: "to")
            }
            return NamedNoopStage(name: "route")
        }
        let yaml = """
            source: { type: stdin }
            stages:
              - { type: route, to: b }
              - { type: route, to: c }
            sinks: { a: { type: stdout }, b: { type: stdout } }
            dead_letter: { type: stdout }
            """
        let errors = loadErrors(yaml, registry: registry)
        #expect(seen.events == ["stages[0] a,b", "stages[1] a,b"])
        #expect(errors.map(\.message) == ["no sink named 'c'"])
        #expect(errors.first?.location == ConfigLocation(file: "p.yaml", line: 4, column: 24))
    }

    /// What one stage does because of another is decided before any stage is built, from
    /// the traits every stage of the list declares: a later one, or another on the same store.
    @Test func factoriesSeeWhatTheOtherStagesDeclare() throws {
        struct Store: PipelineResource {}
        let checks = StageTrait("checks")
        var registry = coreRegistry()
        registry.registerStore(ComponentSpec(name: "memo", summary: "in memory")) { _, _ in Store() }
        let seen = EventLog()
        let storeField = ConfigField("store", .storeName, .default("a"), "the store")
        registry.registerStage(ComponentSpec(name: "builder", summary: "asks", fields: [storeField])) { config, context in
            let store = try config.string("store")
            seen.append("\(context.path) later replaces: \(context.laterStage(declares: .replacesOutputs)), "
                + "\(store) checked: \(context.otherStage(declares: checks, usingStore: store))")
            return NamedNoopStage(name: "builder")
        }
        registry.registerStage(ComponentSpec(name: "replacer", summary: "replaces", fields: [storeField], traits: [.replacesOutputs, checks])) {
            _, context in
            // A stage's own traits are not another stage's.
            seen.append("\(context.path) later replaces: \(context.laterStage(declares: .replacesOutputs)), "
                + "a checked: \(context.otherStage(declares: checks, usingStore: "a"))")
            return NamedNoopStage(name: "replacer")
        }
        let yaml = """
            stores: { a: { type: memo }, b: { type: memo } }
            source: { type: stdin }
            stages:
              - { type: builder }
              - { type: builder, store: b }
              - { type: replacer }
              - { type: builder }
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """
        _ = try PipelineLoader(registry: registry, environment: [:]).load(yaml: yaml, file: "p.yaml")
        #expect(seen.events == [
            "stages[0] later replaces: true, a checked: true",
            "stages[1] later replaces: true, b checked: false",
            "stages[2] later replaces: false, a checked: false",
            "stages[3] later replaces: false, a checked: true",
        ])
        // Outside `stages:` nothing is declared.
        let context = ComponentContext(path: "x", sinkNames: [], logger: Logger(label: "test"))
        #expect(!context.laterStage(declares: .replacesOutputs))
        #expect(!context.otherStage(declares: checks, usingStore: "a"))
    }

    @Test func undefinedVariableFailsLoadWithLocation() {
        let errors = loadErrors("""
            source: { type: stdin }
            sinks:
              out:
                type: file
                path: ${OUT_PATH}
            dead_letter: { type: stdout }
            """)
        #expect(errors.count == 1)
        #expect(errors.first?.location == ConfigLocation(file: "p.yaml", line: 5, column: 11))
        #expect(errors.first?.message.contains("OUT_PATH") == true)
    }

    @Test func lintReportsUnsetVariablesSeparately() throws {
        let yaml = """
            source: { type: file, path: "${INPUT}" }
            sinks:
              out: { type: file, path: "${OUT}", fsync: "${FSYNC:true}" }
            dead_letter: { type: file, path: "${DEAD}" }
            """
        let loader = PipelineLoader(registry: coreRegistry(), environment: ["OUT": "/tmp/o"])
        let report = loader.lint(yaml: yaml, file: "p.yaml")
        #expect(report.errors.isEmpty)
        #expect(report.pipeline != nil)
        #expect(report.unsetVariables.map(\.name) == ["INPUT", "DEAD"])
        #expect(report.unsetVariables.map(\.location) == [
            ConfigLocation(file: "p.yaml", line: 1, column: 29),
            ConfigLocation(file: "p.yaml", line: 4, column: 34),
        ])

        let strict = loader.lint(yaml: yaml, file: "p.yaml", strictEnvironment: true)
        #expect(strict.pipeline == nil)
        #expect(!strict.errors.isEmpty)
        #expect(strict.errors.first?.message.contains("INPUT") == true)
        #expect(strict.errors.first?.location == ConfigLocation(file: "p.yaml", line: 1, column: 29))
    }

    @Test func lintStillReportsRealErrorsNextToUnsetVariables() {
        let yaml = """
            source: { type: file, path: "${INPUT}", bogus: 1 }
            sinks: { out: { type: stdout } }
            dead_letter: { type: stdout }
            """
        let report = PipelineLoader(registry: coreRegistry(), environment: [:]).lint(yaml: yaml, file: "p.yaml")
        #expect(report.pipeline == nil)
        #expect(report.errors.map(\.message) == ["unknown key 'bogus' in 'source'"])
        #expect(report.unsetVariables.map(\.name) == ["INPUT"])
    }

    @Test func durationThatOverflowsIsAConfigErrorNotACrash() async {
        // Regression: an overflowing duration (inf, 1e300s) once trapped instead of being a config error.
        await #expect(processExitsWith: .success) {
            for text in ["inf", "1e300s", "infinityh"] {
                var registry = ComponentRegistry()
                registry.registerCoreComponents()
                let yaml = """
                    source: { type: stdin }
                    sinks: { out: { type: stdout } }
                    dead_letter: { type: stdout }
                    settings: { progress_interval: \(text) }
                    """
                do {
                    _ = try PipelineLoader(registry: registry, environment: [:]).load(yaml: yaml, file: "p.yaml")
                    exit(3)  // accepted an infinite/overflowing duration
                } catch let error as ConfigErrors {
                    guard error.errors.first?.message.contains("progress_interval") == true else { exit(4) }
                } catch {
                    exit(5)
                }
            }
        }
    }

    @Test func registryEntriesCanBeReplacedAndListed() {
        var registry = ComponentRegistry()
        registry.registerStage(ComponentSpec(name: "x", summary: "first")) { _, _ in NamedNoopStage(name: "first") }
        registry.registerStage(ComponentSpec(name: "x", summary: "second")) { _, _ in NamedNoopStage(name: "second") }
        registry.registerCoreComponents()
        #expect(registry.stages["x"]?.summary == "second")
        #expect(Set(registry.sources.keys) == ["stdin", "file"])
        #expect(Set(registry.sinks.keys) == ["stdout", "file"])
    }
}
