import Logging
public import SignetCore

/// Runs a pipeline's test cases (`signet test`): each case loads the pipeline afresh
/// with the suite's environment, in-memory stores instead of the declared ones
/// (`ComponentSpec/testSubstitute`), the case's lines as the source and capturing
/// sinks, so a test writes no file, opens no connection and prints nothing; then
/// compares what the sinks received with the expectation.
public struct PipelineTestRunner: Sendable {
    public var registry: ComponentRegistry

    public init(registry: ComponentRegistry) {
        self.registry = registry
    }

    /// Runs every case of `suite`. Throws when the pipeline itself does not load.
    public func run(_ suite: PipelineTestSuite) async throws(ConfigErrors) -> [PipelineTestOutcome] {
        var outcomes: [PipelineTestOutcome] = []
        for testCase in suite.cases {
            outcomes.append(try await run(testCase, of: suite))
        }
        return outcomes
    }

    private func run(_ testCase: PipelineTestCase, of suite: PipelineTestSuite) async throws(ConfigErrors) -> PipelineTestOutcome {
        let quiet = Logger(label: "signet.test", factory: { _ in SwiftLogNoOpLogHandler() })
        var loader = PipelineLoader(
            registry: registry, environment: suite.environment.merging(testCase.environment) { _, caseValue in caseValue },
            logger: quiet)
        loader.substitutesTestStores = true
        var pipeline = try loader.load(file: suite.pipeline)
        pipeline.source = RecordListSource(lines: testCase.inputs, stream: testCase.name)
        pipeline.settings.progressInterval = nil
        pipeline.settings.sinkRetryTimeout = .zero
        let captures = pipeline.sinks.map { _ in CapturingSink() }
        for index in pipeline.sinks.indices { pipeline.sinks[index].sink = captures[index] }
        let deadLetters = CapturingSink()
        pipeline.deadLetter.sink = deadLetters

        let summary: RunSummary
        do {
            summary = try await PipelineRunner(pipeline: pipeline, logger: quiet).run()
        } catch {
            return PipelineTestOutcome(name: testCase.name, failures: ["the run failed: \(error)"])
        }
        let received = Dictionary(uniqueKeysWithValues: zip(pipeline.sinks.map(\.name), captures.map(\.messages)))
        return PipelineTestOutcome(
            name: testCase.name,
            failures: Self.compare(
                testCase.expectation, received: received, sinkOrder: pipeline.sinks.map(\.name),
                deadLetters: deadLetters.messages, dropped: summary.droppedByReason))
    }

    /// The differences between an expectation and what a run produced, readable one per line.
    static func compare(
        _ expectation: PipelineTestExpectation, received: [String: [OutputMessage]], sinkOrder: [String],
        deadLetters: [OutputMessage], dropped: [String: Int]
    ) -> [String] {
        var failures: [String] = []
        var expectedBySink: [String: [PipelineTestExpectation.Output]] = [:]
        for output in expectation.outputs {
            guard let sink = output.sink ?? (sinkOrder.count == 1 ? sinkOrder[0] : nil) else {
                failures.append("an expected output names no sink, and the pipeline has several: \(sinkOrder.joined(separator: ", "))")
                continue
            }
            guard received[sink] != nil else {
                failures.append("an expected output names sink '\(sink)', which the pipeline does not have (\(sinkOrder.joined(separator: ", ")))")
                continue
            }
            expectedBySink[sink, default: []].append(output)
        }
        for sink in sinkOrder {
            let messages = received[sink] ?? []
            let expected = expectedBySink[sink] ?? []
            for (index, output) in expected.enumerated() {
                guard index < messages.count else {
                    failures.append("\(sink) #\(index + 1): expected \(output.summary), but the sink got only \(messages.count) messages")
                    continue
                }
                if let problem = output.mismatch(messages[index]) {
                    failures.append("\(sink) #\(index + 1): \(problem)")
                }
            }
            if !expectation.allowsMore, messages.count > expected.count {
                for (index, message) in messages.enumerated().dropFirst(expected.count).prefix(5) {
                    failures.append("\(sink) #\(index + 1): unexpected message \(Self.show(message))")
                }
                if messages.count - expected.count > 5 {
                    failures.append("\(sink): \(messages.count - expected.count - 5) more unexpected messages")
                }
            }
            if let count = expectation.counts?[sink], count != messages.count {
                failures.append("\(sink): expected \(count) messages, got \(messages.count)")
            }
        }
        if let counts = expectation.counts {
            for name in counts.keys where received[name] == nil {
                failures.append("counts names sink '\(name)', which the pipeline does not have")
            }
        }
        for (index, dead) in expectation.deadLetters.enumerated() {
            guard index < deadLetters.count else {
                failures.append("dead letter #\(index + 1): expected reason \(dead.reason), but only \(deadLetters.count) records were rejected")
                continue
            }
            if let problem = dead.mismatch(deadLetters[index]) { failures.append("dead letter #\(index + 1): \(problem)") }
        }
        if !expectation.allowsMore, deadLetters.count > expectation.deadLetters.count {
            for (index, message) in deadLetters.enumerated().dropFirst(expectation.deadLetters.count).prefix(5) {
                let facts = PipelineTestExpectation.DeadLetter.facts(message)
                failures.append("dead letter #\(index + 1): unexpected reject \(facts.reason) in \(facts.stage): \(facts.detail)")
            }
        }
        if let expectedDrops = expectation.dropped, expectedDrops.filter({ $0.value > 0 }) != dropped.filter({ $0.value > 0 }) {
            failures.append("dropped: expected \(Self.show(expectedDrops)), got \(Self.show(dropped))")
        }
        return failures
    }

    private static func show(_ message: OutputMessage) -> String {
        let text = String(decoding: message.value.prefix(300), as: UTF8.self)
        return message.value.count > 300 ? text + "..." : text
    }

    private static func show(_ counts: [String: Int]) -> String {
        let entries = counts.filter { $0.value > 0 }.sorted { $0.key < $1.key }
        return entries.isEmpty ? "none" : entries.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
    }
}
