import ArgumentParser
import Foundation
import Signet
import SignetCore
import SignetTesting

struct TestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Runs pipelines' own test cases.",
        discussion: """
            Each FILE is a pipeline (its tests are in tests/NAME.test.yaml or NAME.test.yaml beside it) \
            or a test file. Every case runs the pipeline on its input lines with in-memory stores and \
            capturing sinks (no file is written, nothing is sent), with only the variables the test file \
            sets, and compares the messages, dead letters and drops with what the case expects. \
            docs/pipelines.md describes the test file. Exit 0 when every case passes, 1 when one fails, \
            2 when a file cannot be loaded.

            Example:
              signet test Pipelines/*.yaml
            """)

    @Argument(help: "Pipeline files or test files.")
    var files: [String]

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one pipeline or test file") }
    }

    func run() async throws {
        let runner = PipelineTestRunner(registry: Signet.makeRegistry())
        var testFiles: [String] = []
        var broken = false
        for file in files {
            if PipelineTestSuite.isTestFile(file) {
                testFiles.append(file)
            } else if let tests = PipelineTestSuite.testFile(forPipeline: file) {
                testFiles.append(tests)
            } else {
                print("\(file): error: no tests (looked for tests/NAME.test.yaml and NAME.test.yaml beside it)")
                broken = true
            }
        }
        var passed = 0
        var failed = 0
        var seen = Set<String>()
        for file in testFiles where seen.insert(URL(fileURLWithPath: file).standardizedFileURL.path).inserted {
            do {
                let suite = try PipelineTestSuite.load(file: file, environment: Terminal.environment)
                print("\(file): \(suite.cases.count) tests of \(suite.pipeline)")
                for outcome in try await runner.run(suite) {
                    if outcome.passed {
                        passed += 1
                        print("  PASS  \(outcome.name)")
                    } else {
                        failed += 1
                        print("  FAIL  \(outcome.name)")
                        for failure in outcome.failures { print("        \(failure)") }
                    }
                }
            } catch {
                broken = true
                for problem in error.errors { print(problem.description) }
            }
        }
        print("\(passed) passed, \(failed) failed")
        if broken { throw ExitCode(2) }
        if failed > 0 { throw ExitCode.failure }
    }
}
