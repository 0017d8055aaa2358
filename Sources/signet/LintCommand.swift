import ArgumentParser
import Foundation
import Signet
import SignetCore

struct LintCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lint",
        abstract: "Checks pipeline files without running them.",
        discussion: """
            Parses each file, expands ${VAR} and ${VAR:default}, checks every key against its \
            component's declared keys (types, ranges, allowed values, required keys, "did you mean"), \
            the stage order, the sink names routes use and the stores stages name, and builds every \
            store, source, stage and sink (certificates are loaded, nothing is opened or started). \
            Errors are printed as FILE:LINE:COLUMN: error: MESSAGE. Variables without default that \
            are unset here are listed as warnings whatever the key's type (the machine that lints is \
            often not the one that runs); --strict-env makes them errors. Exit 0 when every file is \
            valid, 1 otherwise.

            Example:
              signet lint Pipelines/*.yaml
            """)

    @Argument(help: "Pipeline files to check.")
    var files: [String]

    @Flag(name: .long, help: "Treat unset variables without default as errors.")
    var strictEnv = false

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one pipeline file") }
    }

    func run() throws {
        let loader = PipelineLoader(registry: Signet.makeRegistry(), environment: Terminal.environment)
        var failed = false
        for file in files {
            let text: String
            do {
                text = try String(contentsOfFile: file, encoding: .utf8)
            } catch {
                print("\(file): error: cannot read: \(error.localizedDescription)")
                failed = true
                continue
            }
            let report = loader.lint(yaml: text, file: file, strictEnvironment: strictEnv)
            for unset in report.unsetVariables {
                print("\(unset.location): warning: \(unset.name) is not set here and has no default; 'signet run' will need it")
            }
            if let pipeline = report.pipeline {
                let stages = pipeline.stages.map(\.name).joined(separator: " -> ")
                let sinks = pipeline.sinks.map(\.name).joined(separator: ", ")
                let stores = pipeline.resources.isEmpty ? "" : "; stores: " + pipeline.resources.map { "\($0.name) (\($0.type))" }.joined(separator: ", ")
                print("\(file): ok (\(stages.isEmpty ? "no stages" : stages); sinks: \(sinks)\(stores))")
            } else {
                failed = true
                for error in report.errors { print(error.description) }
            }
        }
        if failed { throw ExitCode.failure }
    }
}
