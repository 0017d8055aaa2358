import Foundation
import SignetCore
import SignetState

/// The `forward` sink's dead letters: one JSON line per body a receiver refused or that
/// expired, appended and fsynced before the entry leaves the queue.
///
/// ```json
/// {"reason":"forward_refused","detail":"HTTP 400: ...","target":"https://staging.example/apple","attempts":1,
///  "enqueuedAt":1764662400000,"deadAt":1764662401000,"body":"{\"signedPayload\":\"eyJ...\"}"}
/// ```
/// `body` is the notification exactly as received (`jq -r .body` gives it back, to send again).
final class ForwardDeadLetters: Sendable {
    /// One dead letter.
    struct Entry: Sendable {
        var item: ForwardQueueItem
        var reason: ReasonCode
        var detail: String
        /// When it was given up, milliseconds since 1970.
        var at: Int64
    }

    let path: String
    private let file: FileSink

    init(path: String) {
        self.path = path
        file = FileSink(path: path)
    }

    func open() async throws { try await file.open() }
    func close() async throws { try await file.close() }

    func write(_ entries: [Entry]) async throws {
        try await file.write(entries.map { OutputMessage(value: Self.line($0)) })
    }

    static func line(_ entry: Entry) -> [UInt8] {
        var json = JSONText(reserving: entry.item.body.count + 512)
        json.beginObject()
        json.field("reason", entry.reason.rawValue)
        json.field("detail", entry.detail)
        json.field("target", entry.item.target)
        json.field("attempts", entry.item.attempts)
        json.field("enqueuedAt", entry.item.enqueuedAt)
        json.field("deadAt", entry.at)
        json.field("body", String(decoding: entry.item.body, as: UTF8.self))
        json.endObject()
        return json.bytes
    }
}
