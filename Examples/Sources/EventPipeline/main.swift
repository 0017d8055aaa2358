// Runs notifications through Signet's state stages, built in code, into your own sink.
//
//   EventPipeline --bundle-id ID [--environment Sandbox] [--root PEM] --store signet.sqlite notifications.ndjson
//
// Each line of the file is a webhook body ({"signedPayload": ...}). The stages decode, verify,
// drop Apple's retries and move each purchase through its state machine in the SQLite store;
// the sink receives the entitlement changes as typed `EntitlementEvent`s. Run it twice on the
// same file: the second run publishes nothing, every line being a retry of one already applied.
// Lines that fail verification go to dead-letter.ndjson beside the store, with a reason code.
import Foundation
import SignetState  // brings SignetJWS, AppStoreModels and SignetCore with it

/// Your code: here it prints; a service would write to its own database or queue. Return only
/// once the events are safely stored: throwing leaves the batch uncommitted and it is retried.
struct PrintChanges: EntitlementEventSink {
    func write(events: [EntitlementEvent]) async throws {
        for event in events {
            let who = event.originalTransactionId ?? event.appTransactionId ?? "-"
            print("\(event.type.rawValue) \(who) \(event.productId ?? "-") entitled=\(event.entitled) state=\(event.state?.rawValue ?? "-") token=\(event.appAccountToken?.description ?? "-")")
        }
    }
}

func option(_ flag: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

guard let bundleId = option("--bundle-id"), let storePath = option("--store"),
    let input = CommandLine.arguments.dropFirst().last, !input.hasPrefix("--")
else {
    FileHandle.standardError.write(Data("usage: EventPipeline --bundle-id ID [--environment E] [--root PEM] --store DB notifications.ndjson\n".utf8))
    exit(2)
}

do {
    let verifier = try AppStoreVerifier(configuration: VerifierConfiguration(
        roots: try AppleRoots.load([option("--root") ?? "apple"]),
        environment: AppStoreEnvironment(rawValue: option("--environment") ?? "Production"),
        bundleId: bundleId))
    // The store is yours to open and to close: a second writer of the same file is refused
    // ("in use by pid N") until this one closes it.
    let store = try SQLiteStateStore(path: storePath)
    let deadLetters = URL(fileURLWithPath: storePath).deletingLastPathComponent().appendingPathComponent("dead-letter.ndjson").path
    let summary: RunSummary
    do {
        // StatePipeline.stages wires decode → verify → dedupe → transition on this store the way
        // the YAML loader does; Pipeline(...) refuses stages wired so that retries would pass.
        let pipeline = try Pipeline(
            source: LineSource(path: input),
            stages: StatePipeline.stages(verifier: verifier, store: store),
            sinks: [NamedSink(name: "changes", sink: PrintChanges())],
            deadLetter: DeadLetterOutput(sink: FileSink(path: deadLetters)))
        summary = try await PipelineRunner(pipeline: pipeline).run()
    } catch {
        try? store.close()
        throw error
    }
    try store.close()
    print("read \(summary.read), passed \(summary.passed), rejected \(summary.rejected), duplicates \(summary.droppedByReason["duplicate"] ?? 0)")
} catch {
    FileHandle.standardError.write(Data("EventPipeline: \(error)\n".utf8))
    exit(1)
}
