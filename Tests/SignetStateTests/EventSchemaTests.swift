import AppStoreModels
import Foundation
import SignetState
import SignetStateTestSupport
import SignetTestSupport
import Testing

@Suite struct EventSchemaTests {
    static var schemaPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Schemas/entitlement-event.schema.json").path
    }

    @Test(.enabled(if: Python.canImport(), "python3 with the jsonschema package is not installed"))
    func everyEmittedEventValidates() async throws {
        var events: [PublishedEvent] = []
        for row in Table.rows {
            events += try await StateHarness(store: InMemoryStateStore()).runEach(row.history + [row.input])
        }
        events += try await StateHarness(store: InMemoryStateStore()).runEach([
            Fixture.notification("SOMETHING_NEW", uuid: "unknown", signed: Fixture.t0),
            Fixture.appTransaction(Fixture.transaction(otid: "app", id: "app", purchase: Fixture.t0, expires: Fixture.t0 + Fixture.day, signed: Fixture.t0)),
        ])
        let types = Set(events.map(\.type))
        #expect(types.count >= 14, "the run should cover most event types, got \(types.sorted())")
        let lines = events.map { String(decoding: $0.bytes, as: UTF8.self) }.joined(separator: "\n")
        let eventsFile = FileManager.default.temporaryDirectory.appendingPathComponent("signet-events-\(UUID().uuidString).ndjson")
        try lines.write(to: eventsFile, atomically: true, encoding: .utf8)
        let script = """
            import json, sys, jsonschema
            schema = json.load(open(sys.argv[1]))
            jsonschema.Draft202012Validator.check_schema(schema)
            validator = jsonschema.Draft202012Validator(schema)
            count = 0
            for line in open(sys.argv[2]):
                event = json.loads(line)
                errors = list(validator.iter_errors(event))
                if errors:
                    print("invalid event:", line.strip(), "->", errors[0].message)
                    sys.exit(1)
                count += 1
            # The schema must reject what it should: a missing field and an unknown type.
            bad = dict(event); del bad["eventId"]
            assert list(validator.iter_errors(bad)), "missing eventId accepted"
            bad = dict(event); bad["type"] = "nonsense"
            assert list(validator.iter_errors(bad)), "unknown type accepted"
            print(count)
            """
        let (status, text) = try Python.run(script, arguments: [Self.schemaPath, eventsFile.path])
        #expect(status == 0, "\(text)")
        #expect(text.trimmingCharacters(in: .whitespacesAndNewlines) == String(events.count))
    }

    @Test func schemaListsEveryEventTypeAndState() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: Self.schemaPath))
        let schema = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let properties = try #require(schema["properties"] as? [String: Any])
        let types = try #require((properties["type"] as? [String: Any])?["enum"] as? [String])
        #expect(Set(types) == Set(EntitlementEventType.allCases.map(\.rawValue)))
        let states = try #require((properties["state"] as? [String: Any])?["enum"] as? [Any])
        #expect(Set(states.compactMap { $0 as? String }) == Set(SubscriptionState.allCases.map(\.rawValue)))
    }
}
