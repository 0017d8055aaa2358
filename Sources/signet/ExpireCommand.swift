import ArgumentParser
import Foundation
import SignetCore
import SignetState

/// `signet expire`: one expiry sweep against the pipeline's state store.
struct ExpireCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "expire",
        abstract: "Runs one expiry sweep and prints the events of access that ended by time as NDJSON.",
        discussion: """
            Apple sends no notification when a non-renewing subscription ends, and an EXPIRED or
            GRACE_PERIOD_EXPIRED notification can be lost. A long-running pipeline sweeps on its own
            (expiry_sweep, default 60s); a stdin deployment that runs now and then can sweep from cron
            with this command. It uses the transition stage of the pipeline (store, policy,
            expiry_leeway, non_renewing_durations), records the events it prints in the store, and
            so a second call prints nothing new. Events go to stdout, one JSON object per line
            (Schemas/entitlement-event.schema.json, source "clock").

            Examples:
              signet expire >> events.ndjson
              signet expire --pipeline Pipelines/kafka.yaml --at 1767225600000
            """)

    @Option(name: .long, help: "The pipeline file whose transition stage to use (default: the embedded Pipelines/stdin.yaml).")
    var pipeline: String?

    @Option(help: "Sweep as of this instant (ms since 1970) instead of now.")
    var at: Int64?

    func run() async throws {
        let source = try PipelineSourceText(pipeline)
        try source.checkDataDirectory()
        let built = try PipelineLoader.loadForCommand(source)
        guard let stage = built.stages.lazy.compactMap({ $0 as? TransitionStage }).first else {
            throw ConfigurationFailure(description: "signet: the pipeline has no transition stage, so nothing can expire")
        }
        // The pipeline's stores (`stores:`) are resources: opened before the stage, closed after it.
        var failure: (any Error)?
        do {
            for named in built.resources { try await named.resource.open() }
            try await stage.open()
            try await sweep(stage)
        } catch {
            failure = error
        }
        try? await stage.close()
        for named in built.resources.reversed() { try? await named.resource.close() }
        if let inUse = failure as? StateStoreError, inUse.isInUse {
            throw ConfigurationFailure(description: "signet: \(inUse)")
        }
        if let failure {
            Terminal.error("expire failed: \(failure)")
            throw ExitCode.failure
        }
    }

    private func sweep(_ stage: TransitionStage) async throws {
        let instant = at ?? WallClock.milliseconds()
        // Each sweep is committed before its events are printed and marked delivered after:
        // a crash in between leaves them in the outbox, and the next `signet run` delivers them.
        while let batch = try stage.sweep(at: instant, limit: stage.options.sweepLimit) {
            var text: [UInt8] = []
            for record in batch.records {
                for message in record.outputs { text += message.value + [0x0A] }
            }
            try FileHandle.standardOutput.write(contentsOf: Data(text))
            try await stage.acknowledge(batch)
        }
    }
}
