import Foundation
import Hummingbird
import Logging
import SignetAppStorePipeline
import SignetCore
import SignetState

// The dead letters page: the newest refused inputs with their reasons, and (an operator, a
// webhook pipeline) a replay of one through the pipeline's own webhook, confirmed first and
// recorded in the audit log.
extension Console {
    struct DeadLetterRow {
        var id: String
        var when: String
        var reason: String
        var stage: String
        var detail: String
        var replayable: Bool
        var canReplay: Bool
        var csrf: String
    }

    struct DeadLettersValues {
        var file: String
        var rows: [DeadLetterRow]
        var note: String?
        var banner: Banner?
    }

    /// Entries the page lists at most.
    static let deadLettersShown = 200

    func deadLetterList(_ session: ConsoleSessions.Session, action: String?) async -> Response {
        guard let deadLetters else {
            return failure(
                .notFound, "No dead-letter file",
                "This pipeline's dead letters do not go to a json file the console can read (dead_letter: {type: file, format: json}).",
                session: session)
        }
        do {
            let entries = try await onStore { try deadLetters.newest(limit: Self.deadLettersShown) }
            let highlighted = try await onStore { [store] in try action.flatMap { try store.roles().supportAction(requestIdentifier: $0) } }
            let canReplay = session.role == .operator && deadLetters.replay != nil
            let rows = entries.map { entry in
                DeadLetterRow(
                    id: entry.id, when: entry.rejectedAt, reason: entry.reason, stage: entry.stage, detail: String(entry.detail.prefix(300)),
                    replayable: entry.input != nil, canReplay: canReplay && entry.input != nil, csrf: session.csrf)
            }
            let note = deadLetters.replay == nil
                ? "This pipeline does not read a webhook: replay with `signet dead-letters replay` (docs/operations.md)." : nil
            return html(.ok, "dead-letters", title: "Dead letters", session: session, DeadLettersValues(
                file: deadLetters.file, rows: rows, note: note, banner: highlighted.map(Self.banner)))
        } catch {
            return failure(.serviceUnavailable, "Unreadable", "The dead-letter file could not be read: \(error)", session: session)
        }
    }

    func replayDeadLetter(_ fields: [String: String], _ session: ConsoleSessions.Session) async -> Response {
        guard session.role == .operator else {
            logger.warning("console: \(session.name) (read_only) was refused a dead letter replay")
            return failure(.forbidden, "Not allowed", "Your credential is read-only: only an operator can act.", session: session)
        }
        guard let deadLetters, let replay = deadLetters.replay else {
            return failure(.conflict, "Not replayed", "This pipeline does not read a webhook: use `signet dead-letters replay`.", session: session)
        }
        let id = fields["id"] ?? ""
        let requestId = SupportDesk.canonical(fields["request_id"]) ?? UUID().uuidString.lowercased()
        let done = Self.redirect("\(ConsoleConfiguration.path)/dead-letters?action=\(ConsoleForm.pathSegment(requestId))")
        do {
            guard let entry = try await onStore({ try deadLetters.newest(limit: .max).first { $0.id == id } }), let input = entry.input else {
                return failure(.notFound, "Not replayed", "No dead letter \(id) with its input kept among the newest entries.", session: session)
            }
            struct Asked: Codable {
                var deadLetterId: String
                var reason: String
            }
            let record = SupportActionRecord(
                requestIdentifier: requestId, actor: session.name, action: "replay_dead_letter",
                parameters: try ConsumptionRecordCoding.encode(Asked(deadLetterId: id, reason: entry.reason)), at: WallClock.milliseconds())
            let desk = SupportDesk(store: try await onStore { [store] in try store.roles() }, actor: session.name)
            // Answered before under this identifier (processed, or refused again): that answer stands.
            if let kept = try await onStore({ try desk.previous(record) }), kept.status == .done || kept.status == .refused { return done }
            guard fields["confirm"] == "yes" else {
                return html(.ok, "confirm", title: "Replay a dead letter?", session: session, Confirmation(
                    heading: "Replay this dead letter?",
                    warning: "Its input goes through the pipeline's webhook again: processed if it verifies now, dropped if it was processed before, dead-lettered again if it still fails.",
                    facts: [
                        Fact(name: "Dead letter", value: id), Fact(name: "Reason", value: entry.reason),
                        Fact(name: "Refused at", value: entry.rejectedAt), Fact(name: "Request identifier", value: requestId),
                    ],
                    action: "\(ConsoleConfiguration.path)/dead-letters/replay", csrf: session.csrf,
                    fields: [Field(name: "id", value: id), Field(name: "request_id", value: requestId)],
                    button: "Replay", cancel: "\(ConsoleConfiguration.path)/dead-letters"))
            }
            _ = try await onStore { try desk.begin(record) }
            logger.info("console: \(session.name) replays dead letter \(id) (\(entry.reason))")
            let (answer, status): (String, SupportActionRecord.Status) = switch await replay(input) {
            case .success(let outcome): (outcome.description, outcome.refusedAgain > 0 ? .refused : outcome.unanswered.isEmpty ? .done : .failed)
            case .failure(let failure): (failure.description, .failed)
            }
            try await onStore { try desk.recordDone(record, answer: answer, status: status) }
            return done
        } catch let notSent as SupportDesk.NotSent {
            return failure(.conflict, "Not replayed", "\(notSent)", session: session)
        } catch {
            return storeFailure(error, session)
        }
    }
}
