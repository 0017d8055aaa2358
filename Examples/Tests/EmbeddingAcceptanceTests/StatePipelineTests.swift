// (2)-(4) The state stages in code: retries, bad input, typed events, wiring checks, the
// entitlement answer and store ownership. This file imports SignetState only (besides
// Foundation and Testing): SignetJWS, AppStoreModels and SignetCore come with it.
import Foundation
import SignetState
import Testing

@Suite("State pipeline in code (import SignetState)")
struct StatePipelineTests {
    let fixtures = Fixtures.shared

    // MARK: Apple's retries

    @Test("every notification delivered twice, in one run and again after a restart: events once, retries counted as duplicates")
    func retriesPublishOnceAcrossARestart() async throws {
        try await withTemporaryDirectory { directory in
            let verifier = try fixtureVerifier(in: directory)
            let lines = fixtures.notifications
            let half = lines.count / 2

            // What each notification yields delivered once, on a store of its own.
            let reference = try await runPipeline(
                lines: lines, stages: StatePipeline.stages(verifier: verifier, store: InMemoryStateStore()), in: directory, name: "once")
            #expect(reference.summary.read == lines.count)
            #expect(reference.summary.passed == lines.count)
            #expect(!reference.events.isEmpty)
            let referenceIds = Set(reference.events.map(\.eventId))
            #expect(referenceIds.count == reference.events.count)

            // Each line twice: the first half with its copy right behind it (same batch), the
            // second half copied again at the end (later batches, after the originals committed).
            let doubled = lines[..<half].flatMap { [$0, $0] } + lines[half...] + lines[half...]
            var settings = PipelineSettings()
            settings.batchSize = 16
            let path = directory.appendingPathComponent("signet.sqlite").path

            let store = try SQLiteStateStore(path: path)
            let first: RunResult
            do {
                first = try await runPipeline(
                    lines: doubled, stages: StatePipeline.stages(verifier: verifier, store: store), in: directory, name: "doubled", settings: settings)
            } catch {
                try? store.close()
                throw error
            }
            try store.close()
            #expect(first.summary.read == 2 * lines.count)
            #expect(first.summary.passed == lines.count)
            #expect(first.summary.rejected == 0)
            #expect(first.summary.dropped == lines.count)
            #expect(first.summary.droppedByReason["duplicate"] == lines.count)
            #expect(first.events.count == reference.events.count, "a retry published events again")
            #expect(Set(first.events.map(\.eventId)) == referenceIds)
            #expect(first.messages.count == first.events.count)

            // A restart: the same store reopened, the same deliveries again.
            let reopened = try SQLiteStateStore(path: path)
            let second: RunResult
            do {
                second = try await runPipeline(
                    lines: doubled, stages: StatePipeline.stages(verifier: verifier, store: reopened), in: directory, name: "doubled", settings: settings)
            } catch {
                try? reopened.close()
                throw error
            }
            try reopened.close()
            #expect(second.summary.read == 2 * lines.count)
            #expect(second.summary.passed == 0)
            #expect(second.summary.droppedByReason["duplicate"] == 2 * lines.count)
            #expect(second.events.isEmpty, "retries after a restart published \(second.events.count) events")
            #expect(second.messages.isEmpty)
            #expect(second.deadLetters.isEmpty)
        }
    }

    // MARK: Bad input

    @Test("forged lines, another app, another environment: dead-lettered with their reason, counted, never granting; the run goes on")
    func badInputIsDeadLetteredAndTheRunGoesOn() async throws {
        try await withTemporaryDirectory { directory in
            let verifier = try fixtureVerifier(in: directory)
            let genuine = Array(fixtures.notifications.prefix(15))
            let forged = fixtures.forged
            let bad = forged + fixtures.wrongBundle + fixtures.wrongEnvironment
            // Bad lines first, between and after the genuine ones.
            var lines: [String] = Array(forged.prefix(3))
            lines += genuine[0..<5]
            lines += fixtures.wrongBundle
            lines += genuine[5..<10]
            lines += fixtures.wrongEnvironment
            lines += forged.dropFirst(3)
            lines += genuine[10..<15]
            #expect(lines.count == bad.count + genuine.count)

            // The purchases the wrongly addressed lines name (they are genuinely signed).
            let anyApp = try fixtureVerifier(in: directory, bundleId: nil, environment: nil)
            var misaddressed: Set<String> = []
            for line in fixtures.wrongBundle + fixtures.wrongEnvironment {
                let notification = try anyApp.verifyNotification(try #require(Fixtures.signedPayload(of: line)))
                if let purchase = notification.transaction?.payload.originalTransactionId { misaddressed.insert(purchase) }
            }
            #expect(!misaddressed.isEmpty)

            let reference = try await runPipeline(
                lines: genuine, stages: StatePipeline.stages(verifier: verifier, store: InMemoryStateStore()), in: directory, name: "genuine")

            let path = directory.appendingPathComponent("signet.sqlite").path
            let store = try SQLiteStateStore(path: path)
            let result: RunResult
            do {
                result = try await runPipeline(lines: lines, stages: StatePipeline.stages(verifier: verifier, store: store), in: directory, name: "mixed")
            } catch {
                try? store.close()
                throw error
            }
            let now = nowMilliseconds()
            for purchase in misaddressed {
                #expect(try store.entitlements(originalTransactionId: purchase, at: now).isEmpty, "\(purchase) of a refused line is in the store")
            }
            try store.close()

            #expect(result.summary.read == lines.count)
            #expect(result.summary.passed == genuine.count, "the genuine lines after the bad ones did not all pass")
            #expect(result.summary.rejected == bad.count)
            // Exactly the events of the genuine lines: nothing from a refused one.
            #expect(Set(result.events.map(\.eventId)) == Set(reference.events.map(\.eventId)))
            #expect(result.events.count == reference.events.count)
            #expect(!result.events.contains { $0.originalTransactionId.map(misaddressed.contains) ?? false })

            // Every bad line reached the dead-letter sink once, with the documented reason and stage.
            #expect(result.deadLetters.count == bad.count)
            var byReason: [String: Int] = [:]
            for letter in result.deadLetters {
                byReason[letter.reason, default: 0] += 1
                #expect(DocumentedReasons.stage(of: letter.reason) == letter.stage, "\(letter.reason) given by stage \(letter.stage)")
                #expect(letter.id != nil, "a dead letter without id")
            }
            #expect(result.summary.rejectedByReason == byReason)
            func reasons(of group: [String]) -> [String] {
                group.map { line in result.deadLetters.first { $0.input == line }?.reason ?? "not dead-lettered" }
            }
            #expect(reasons(of: fixtures.wrongBundle) == Array(repeating: "bundle_id_mismatch", count: fixtures.wrongBundle.count))
            #expect(reasons(of: fixtures.wrongEnvironment) == Array(repeating: "environment_mismatch", count: fixtures.wrongEnvironment.count))
            for (line, reason) in zip(forged, reasons(of: forged)) {
                #expect(DocumentedReasons.stage(of: reason) != nil, "forged line \(line.prefix(60)): \(reason)")
            }
            // The standalone verifier and the pipeline agree on why.
            for line in forged {
                guard let payload = Fixtures.signedPayload(of: line) else { continue }
                var expected = "verified"
                do { _ = try verifier.verifyNotification(payload) } catch let error as RecordRejection { expected = error.reason.rawValue }
                #expect(reasons(of: [line]) == [expected])
            }

            // Rejects are not remembered: after a restart the same lines are dead-lettered again, with the same ids.
            let reopened = try SQLiteStateStore(path: path)
            let again: RunResult
            do {
                again = try await runPipeline(lines: bad, stages: StatePipeline.stages(verifier: verifier, store: reopened), in: directory, name: "bad")
            } catch {
                try? reopened.close()
                throw error
            }
            try reopened.close()
            #expect(again.summary.rejected == bad.count)
            #expect(again.summary.passed == 0)
            #expect(again.events.isEmpty)
            #expect(Set(again.deadLetters.compactMap(\.id)) == Set(result.deadLetters.compactMap(\.id)))
        }
    }

    // MARK: Typed events

    /// Fails for good, as a destination that cannot recover.
    struct BrokenEventSink: EntitlementEventSink {
        func write(events: [EntitlementEvent]) async throws {
            throw SinkError("the destination refused the events", isPermanent: true)
        }
    }

    @Test("a sink that failed for good stops the run; on the next start the typed sink receives the undelivered events from the outbox, once")
    func undeliveredEventsReachTheTypedSinkAfterARestart() async throws {
        try await withTemporaryDirectory { directory in
            let verifier = try fixtureVerifier(in: directory)
            let lines = fixtures.notifications
            let reference = try await runPipeline(
                lines: lines, stages: StatePipeline.stages(verifier: verifier, store: InMemoryStateStore()), in: directory, name: "reference")
            let input = directory.appendingPathComponent("input.ndjson")
            try (lines.joined(separator: "\n") + "\n").write(to: input, atomically: true, encoding: .utf8)
            let path = directory.appendingPathComponent("signet.sqlite").path

            let store = try SQLiteStateStore(path: path)
            do {
                let pipeline = try Pipeline(
                    source: LineSource(path: input.path), stages: StatePipeline.stages(verifier: verifier, store: store),
                    sinks: [NamedSink(name: "broken", sink: BrokenEventSink())], deadLetter: DeadLetterOutput(sink: CapturingSink()))
                await #expect(throws: (any Error).self, "a sink failing for good did not stop the run") {
                    try await PipelineRunner(pipeline: pipeline, logger: quietLogger).run()
                }
            } catch {
                try? store.close()
                throw error
            }
            try store.close()

            // The next start, with a working sink: the same file is read again.
            let reopened = try SQLiteStateStore(path: path)
            let second: RunResult
            do {
                second = try await runPipeline(lines: lines, stages: StatePipeline.stages(verifier: verifier, store: reopened), in: directory)
            } catch {
                try? reopened.close()
                throw error
            }
            try reopened.close()
            #expect(second.summary.redelivered > 0, "nothing was redelivered from the outbox: \(second.summary)")
            #expect(second.summary.passed == 0, "the inputs applied before the failure were applied again")
            #expect(second.summary.droppedByReason["duplicate"] == lines.count)
            #expect(second.events.count == reference.events.count)
            #expect(Set(second.events.map(\.eventId)) == Set(reference.events.map(\.eventId)))
            let decoded = try second.messages.map { try JSONDecoder().decode(EntitlementEvent.self, from: Data($0.value)) }
            #expect(decoded == second.events, "the typed sink and the plain sink disagree on redelivered events")
        }
    }

    @Test("an EntitlementEventSink receives exactly what a plain Sink receives, decoded with JSONDecoder")
    func typedSinkMatchesPlainSink() async throws {
        try await withTemporaryDirectory { directory in
            let verifier = try fixtureVerifier(in: directory)
            let result = try await runPipeline(
                lines: fixtures.notifications, stages: StatePipeline.stages(verifier: verifier, store: InMemoryStateStore()), in: directory)
            #expect(!result.events.isEmpty)
            let decoded = try result.messages.map { try JSONDecoder().decode(EntitlementEvent.self, from: Data($0.value)) }
            #expect(decoded == result.events)
            #expect(try result.messages.map { try EntitlementEvent(json: $0.value) } == result.events)
            for (message, event) in zip(result.messages, result.events) {
                #expect(message.key.map { String(decoding: $0, as: UTF8.self) } == (event.originalTransactionId ?? event.appTransactionId))
                #expect(message.header(.eventId) == event.eventId)
                #expect(message.header(.eventType) == event.type.rawValue)
            }
            #expect(result.events.contains { $0.type == .granted && $0.entitled })
            #expect(Set(result.events.map(\.eventId)).count == result.events.count)
        }
    }

    // MARK: Wiring

    /// The stages wired by hand as `StatePipeline.stages` wires them, with the dedupe and transition stores given.
    func handBuilt(_ verifier: AppStoreVerifier, dedupeStore: any StateStore, transitionStore: (any StateStore)?) -> [any Stage] {
        var options = DedupeStage.Options()
        options.keysCheckedByTransition = true
        var stages: [any Stage] = [
            DecodeStage(), VerifyStage(verifier: verifier, emitsDocument: false), DedupeStage(store: dedupeStore, options: options),
        ]
        if let transitionStore { stages.append(TransitionStage(store: transitionStore)) }
        return stages
    }

    func build(_ stages: [any Stage], source: any Source = RecordingSource(lines: []), sink: CapturingSink = CapturingSink()) throws(PipelineWiringError) -> Pipeline {
        try Pipeline(source: source, stages: stages, sinks: [NamedSink(name: "out", sink: sink)], deadLetter: DeadLetterOutput(sink: CapturingSink()))
    }

    @Test("a dedupe leaving its lookup to a transition that is not on its store is refused, naming the stage")
    func dedupeWithoutItsTransitionIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            let verifier = try fixtureVerifier(in: directory)
            let store = InMemoryStateStore()
            let cases: [(String, [any Stage])] = [
                ("a transition on another store", handBuilt(verifier, dedupeStore: store, transitionStore: InMemoryStateStore())),
                ("no transition at all, and a verify that emits its document",
                    [DecodeStage(), VerifyStage(verifier: verifier), {
                        var options = DedupeStage.Options()
                        options.keysCheckedByTransition = true
                        return DedupeStage(store: store, options: options)
                    }()]),
            ]
            for (what, stages) in cases {
                let error = #expect(throws: PipelineWiringError.self, "\(what) was accepted") { try build(stages) }
                #expect(error?.stage == "dedupe", "\(what): \(error.map(String.init(describing:)) ?? "-")")
                #expect(error?.index == 2)
                #expect(error?.description.contains("dedupe") == true)
            }
        }
    }

    @Test("a verify without its document and no later stage publishing is refused, naming the stage")
    func verifyPublishingNothingIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            let verifier = try fixtureVerifier(in: directory)
            let store = InMemoryStateStore()
            let cases: [(String, [any Stage])] = [
                ("verify alone", [DecodeStage(), VerifyStage(verifier: verifier, emitsDocument: false)]),
                ("verify and dedupe", [DecodeStage(), VerifyStage(verifier: verifier, emitsDocument: false), DedupeStage(store: store)]),
            ]
            for (what, stages) in cases {
                let error = #expect(throws: PipelineWiringError.self, "\(what) was accepted") { try build(stages) }
                #expect(error?.stage == "verify", "\(what): \(error.map(String.init(describing:)) ?? "-")")
                #expect(error?.index == 1)
                #expect(error?.description.contains("verify") == true)
            }
            // With its document, decode → verify → dedupe (dedupe looking keys up itself) is fine.
            #expect(throws: Never.self) { try build([DecodeStage(), VerifyStage(verifier: verifier), DedupeStage(store: store)]) }
        }
    }

    @Test("the correct hand-built pipeline (one store) is accepted, publishes what StatePipeline.stages does, and drops committed retries after a restart")
    func correctHandBuiltPipelineWorks() async throws {
        try await withTemporaryDirectory { directory in
            let verifier = try fixtureVerifier(in: directory)
            let lines = fixtures.notifications
            let reference = try await runPipeline(
                lines: lines, stages: StatePipeline.stages(verifier: verifier, store: InMemoryStateStore()), in: directory, name: "reference")

            let path = directory.appendingPathComponent("signet.sqlite").path
            var results: [RunResult] = []
            for run in 0..<2 {  // a start, then a restart on the same file
                let store = try SQLiteStateStore(path: path)
                do {
                    let stages = handBuilt(verifier, dedupeStore: store, transitionStore: store)
                    #expect(throws: Never.self) { try build(stages) }
                    results.append(try await runPipeline(lines: lines, stages: stages, in: directory, name: "run\(run)"))
                } catch {
                    try? store.close()
                    throw error
                }
                try store.close()
            }
            #expect(results[0].summary.passed == lines.count)
            #expect(Set(results[0].events.map(\.eventId)) == Set(reference.events.map(\.eventId)))
            #expect(results[0].events.count == reference.events.count)
            #expect(results[0].messages.count == results[0].events.count, "the plain sink got more than the events")
            #expect(results[1].summary.passed == 0)
            #expect(results[1].summary.droppedByReason["duplicate"] == lines.count)
            #expect(results[1].events.isEmpty)
        }
    }

    @Test("stages changed after the pipeline was built: run() refuses before opening or processing anything")
    func runnerChecksWiringAgain() async throws {
        try await withTemporaryDirectory { directory in
            let verifier = try fixtureVerifier(in: directory)
            let path = directory.appendingPathComponent("signet.sqlite").path
            let store = try SQLiteStateStore(path: path)
            defer { try? store.close() }
            let firstPayload = try #require(Fixtures.signedPayload(of: fixtures.notifications[0]))
            let purchase = try #require(try verifier.verifyNotification(firstPayload).transaction?.payload.originalTransactionId)

            let changes: [(String, String, ([any Stage]) -> [any Stage])] = [
                ("transition on another store", "dedupe", { Array($0.dropLast()) + [TransitionStage(store: InMemoryStateStore())] }),
                ("transition removed, verify emitting its document", "dedupe", { [$0[0], VerifyStage(verifier: verifier), $0[2]] }),
                ("dedupe and transition removed", "verify", { Array($0.prefix(2)) }),
            ]
            for (what, stage, change) in changes {
                let source = RecordingSource(lines: fixtures.notifications)
                let sink = CapturingSink()
                var pipeline = try build(handBuilt(verifier, dedupeStore: store, transitionStore: store), source: source, sink: sink)
                pipeline.stages = change(pipeline.stages)
                let error = await #expect(throws: PipelineWiringError.self, "\(what): run() did not refuse") {
                    try await PipelineRunner(pipeline: pipeline, logger: quietLogger).run()
                }
                #expect(error?.stage == stage, "\(what): \(error.map(String.init(describing:)) ?? "-")")
                #expect(source.openCount == 0, "\(what): the source was opened")
                #expect(source.askCount == 0, "\(what): the source was read")
                #expect(sink.openCount == 0, "\(what): the sink was opened")
                #expect(sink.messages.isEmpty)
            }
            #expect(try store.entitlements(originalTransactionId: purchase, at: nowMilliseconds()).isEmpty, "something was applied")
        }
    }

    // MARK: The entitlement answer

    @Test("entitlements by purchase and by appAccountToken written in upper case, as iOS apps do")
    func entitlementQueries() async throws {
        try await withTemporaryDirectory { directory in
            let verifier = try fixtureVerifier(in: directory)
            let path = directory.appendingPathComponent("signet.sqlite").path
            let store = try SQLiteStateStore(path: path)
            let result: RunResult
            do {
                result = try await runPipeline(lines: fixtures.notifications, stages: StatePipeline.stages(verifier: verifier, store: store), in: directory)
            } catch {
                try? store.close()
                throw error
            }
            defer { try? store.close() }
            let now = nowMilliseconds()
            let last = lastEventByPurchase(result.events)
            #expect(!last.isEmpty)

            /// Still current in a minute: no end passes while the test runs.
            func current(_ event: EntitlementEvent) -> Bool {
                (event.expiresDate ?? .max) > now + 60_000 && (event.gracePeriodExpiresDate ?? .max) > now + 60_000
            }
            var checked = 0
            for (purchase, event) in last where !event.entitled || current(event) {
                let answer = try store.entitlements(originalTransactionId: purchase, at: now)
                #expect(answer.count == 1, "\(purchase): \(answer.count) entitlements")
                guard let entitlement = answer.first else { continue }
                #expect(entitlement.originalTransactionId == purchase)
                #expect(entitlement.entitled == event.entitled, "\(purchase): the store says \(entitlement.entitled), its last event \(event.type) says \(event.entitled)")
                #expect(entitlement.productId == event.productId)
                #expect(entitlement.appAccountToken == event.appAccountToken)
                if event.entitled { #expect(entitlement.state == event.state) }
                checked += 1
            }
            #expect(checked >= last.count / 2)

            // "Does this customer have access now?" with the token as the app wrote it.
            let (purchase, event) = try #require(
                last.sorted { $0.key < $1.key }.first { $0.value.entitled && current($0.value) && $0.value.appAccountToken != nil },
                "no current entitled purchase with an appAccountToken in the fixtures")
            let token = try #require(event.appAccountToken)
            let upper = token.description.uppercased()
            #expect(upper != token.description, "the token has letters, so the case matters")
            let parsed = try AppAccountToken(parsing: upper)
            #expect(parsed == token)
            let purchases = try store.entitlements(appAccountToken: parsed, at: now)
            #expect(purchases.contains { $0.originalTransactionId == purchase && $0.entitled && !$0.restricted })
            #expect(purchases.allSatisfy { $0.appAccountToken == token })

            // Unknown purchase, unknown customer: no answer, not an error.
            #expect(try store.entitlements(originalTransactionId: "1", at: now).isEmpty)
            #expect(try store.entitlements(appAccountToken: AppAccountToken(UUID()), at: now).isEmpty)
        }
    }

    @Test("an appAccountToken that is not a UUID is refused with an error; any case parses to the same token")
    func appAccountTokenParsing() throws {
        for text in ["not-a-uuid", "", "7E3FB20B-4CDB-47CC-936D", "7E3FB20B4CDB47CC936D99D65F608138X", "alice@example.com"] {
            #expect(throws: AppAccountToken.Invalid.self, "\(text.debugDescription) was taken for a token") {
                try AppAccountToken(parsing: text)
            }
        }
        let upper = try AppAccountToken(parsing: "7E3FB20B-4CDB-47CC-936D-99D65F608138")
        let lower = try AppAccountToken(parsing: "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(upper == lower)
        #expect(upper.description == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
    }

    // MARK: Store ownership

    @Test("a second SQLiteStateStore writer of the same file is refused (isInUse, \"in use by pid N\") until the first is closed")
    func secondWriterIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            let path = directory.appendingPathComponent("signet.sqlite").path
            let first = try SQLiteStateStore(path: path)
            let error = #expect(throws: StateStoreError.self, "a second writer was accepted") { try SQLiteStateStore(path: path) }
            #expect(error?.isInUse == true)
            let pid = ProcessInfo.processInfo.processIdentifier
            #expect(error?.description.contains("in use by pid \(pid)") == true, "\(error.map(String.init(describing:)) ?? "-")")
            // Refused again while it stays open: the refusal does not disturb the owner.
            #expect(throws: StateStoreError.self) { try SQLiteStateStore(path: path) }
            try first.close()
            let second = try SQLiteStateStore(path: path)
            try second.close()
        }
    }

    @Test("a read-only store opens beside the writer and answers what the writer committed")
    func readOnlyStoreBesideTheWriter() async throws {
        try await withTemporaryDirectory { directory in
            let verifier = try fixtureVerifier(in: directory)
            let path = directory.appendingPathComponent("signet.sqlite").path
            let writer = try SQLiteStateStore(path: path)
            var writerOpen = true
            defer { if writerOpen { try? writer.close() } }
            let result = try await runPipeline(
                lines: fixtures.notifications, stages: StatePipeline.stages(verifier: verifier, store: writer), in: directory)
            let purchases = Array(lastEventByPurchase(result.events).keys).sorted()
            #expect(!purchases.isEmpty)

            var options = SQLiteStateStore.Options()
            options.readOnly = true
            let reader = try SQLiteStateStore(path: path, options: options)  // the writer is still open
            defer { try? reader.close() }
            let now = nowMilliseconds()
            for purchase in purchases {
                let fromReader = try reader.entitlements(originalTransactionId: purchase, at: now)
                #expect(fromReader.count == 1)
                #expect(fromReader == (try writer.entitlements(originalTransactionId: purchase, at: now)))
            }
            // The reader holds no writer lock: the writer restarts beside it.
            try writer.close()
            writerOpen = false
            let restarted = try SQLiteStateStore(path: path)
            try restarted.close()
        }
    }
}
