import Foundation
import Testing
import SignetTestSupport

import SignetCore
@testable import SignetTesting

/// How `signet test` compares a run with a case's expectation.
@Suite("Pipeline test expectations")
struct PipelineTestRunnerTests {
    func message(_ json: String) -> OutputMessage { OutputMessage(value: Array(json.utf8)) }

    func deadLetter(_ reason: String, stage: String = "verify", detail: String = "") -> OutputMessage {
        OutputMessage(value: [], headers: [.init("signet-reason", reason), .init("signet-stage", stage), .init("signet-detail", detail)])
    }

    func output(_ fields: [(String, String)], sink: String? = nil) -> PipelineTestExpectation.Output {
        .init(sink: sink, fields: fields.map { (path: $0.0, value: $0.1) }, value: nil)
    }

    @Test func fieldsMatchByDottedPathAndJSONText() {
        var expectation = PipelineTestExpectation()
        expectation.outputs = [output([("type", "granted"), ("entitled", "true"), ("n.count", "2"), ("gone", "null")])]
        let failures = PipelineTestRunner.compare(
            expectation, received: ["out": [message(#"{"type":"granted","entitled":true,"n":{"count":2},"gone":null}"#)]],
            sinkOrder: ["out"], deadLetters: [], dropped: [:])
        #expect(failures == [])
        let wrong = PipelineTestRunner.compare(
            expectation, received: ["out": [message(#"{"type":"revoked","entitled":false,"n":{}}"#)]],
            sinkOrder: ["out"], deadLetters: [], dropped: [:])
        #expect(wrong == [
            #"out #1: type: expected "granted", got "revoked"; entitled: expected "true", got "false"; n.count: expected "2", but it is absent; gone: expected "null", but it is absent"#
        ])
    }

    @Test func nothingElseUnlessAllowed() {
        var expectation = PipelineTestExpectation()
        expectation.outputs = [output([("type", "granted")])]
        expectation.deadLetters = [.init(reason: "invalid_signature", stage: "verify", detailContains: "x5c")]
        let received = ["out": [message(#"{"type":"granted"}"#), message(#"{"type":"renewed"}"#)]]
        let dead = [deadLetter("invalid_signature", detail: "bad x5c[0]"), deadLetter("malformed_json", stage: "decode", detail: "not JSON")]
        let strict = PipelineTestRunner.compare(expectation, received: received, sinkOrder: ["out"], deadLetters: dead, dropped: [:])
        #expect(strict == [
            #"out #2: unexpected message {"type":"renewed"}"#,
            "dead letter #2: unexpected reject malformed_json in decode: not JSON",
        ])
        expectation.allowsMore = true
        #expect(PipelineTestRunner.compare(expectation, received: received, sinkOrder: ["out"], deadLetters: dead, dropped: [:]) == [])
    }

    @Test func sinksCountsAndDrops() {
        var expectation = PipelineTestExpectation()
        expectation.outputs = [output([("type", "granted")])]
        expectation.counts = ["audit": 1, "missing": 0]
        expectation.dropped = ["duplicate": 2]
        let failures = PipelineTestRunner.compare(
            expectation, received: ["out": [], "audit": []], sinkOrder: ["out", "audit"], deadLetters: [], dropped: ["duplicate": 1])
        #expect(failures == [
            "an expected output names no sink, and the pipeline has several: out, audit",
            "audit: expected 1 messages, got 0",
            "counts names sink 'missing', which the pipeline does not have",
            "dropped: expected duplicate: 2, got duplicate: 1",
        ])
    }

    @Test func aTestFileIsValidatedLikeAPipeline() throws {
        let dir = try TemporaryDirectory(prefix: "signet-testing-tests")
        defer { dir.remove() }
        let file = try dir.write("p.test.yaml", "tests:\n  - name: x\n    input_file: a.ndjson\n    expect: {dropped: {duplicate: many}}\n")
        do {
            _ = try PipelineTestSuite.load(file: file, environment: [:])
            Issue.record("expected errors")
        } catch {
            #expect(error.errors.map(\.message) == [
                "unknown key 'input_file' in 'tests[0]' (did you mean 'input_files'?)",
                "'tests[0].expect.dropped.duplicate' must be an integer, got 'many'",
            ])
        }
        try dir.write("in.ndjson", "a\n\nb\n")
        try FileManager.default.createDirectory(atPath: dir.path("tests"), withIntermediateDirectories: true)
        let good = try dir.write(
            "tests/stdin.test.yaml",
            "environment: { ROOT: \"${SIGNET_TEST_DIR}/root.pem\" }\ntests:\n  - name: x\n    input_files: [../in.ndjson, ../in.ndjson]\n    input_lines: ['{\"a\": 1, \"b\": 2}']\n    expect: {}\n")
        let suite = try PipelineTestSuite.load(file: good, environment: [:])
        #expect(suite.pipeline == dir.path("stdin.yaml"))
        #expect(suite.environment["ROOT"] == dir.path("tests") + "/root.pem")
        #expect(suite.cases.first?.inputs.map { String(decoding: $0, as: UTF8.self) } == ["a", "b", "a", "b", #"{"a": 1, "b": 2}"#])
        #expect(PipelineTestSuite.testFile(forPipeline: dir.path("stdin.yaml")) == dir.path("tests/stdin.test.yaml"))
    }
}
