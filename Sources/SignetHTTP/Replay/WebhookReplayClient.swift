import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
package import SignetCore

/// Posts inputs (kept by dead letters) to a running webhook, one at a time as Apple would,
/// and tallies what its answers say became of each: `signet dead-letters replay --webhook`.
///
/// A pipeline running as a service holds its store; going through its webhook replays into
/// it without stopping it, and each answer comes after the commit.
package struct WebhookReplayClient: Sendable {
    public var url: String
    /// How long one input may keep meeting 503, 429 or a refused connection (a pipeline
    /// draining or restarting) before it is counted without an answer.
    public var patience: Duration

    public init(url: String, patience: Duration = .seconds(30)) {
        self.url = url
        self.patience = patience
    }

    static let unreachable = "no connection"
    static let notTried = "not tried after that"

    /// What the webhook said of one input.
    enum Verdict: Equatable {
        case committed, duplicate
        case refused(reason: String)
        case unanswered(String)
    }

    public func post(_ records: [Record]) async throws -> DeadLetterReplayOutcome {
        let client = HTTPClient(eventLoopGroupProvider: .singleton)
        var outcome = DeadLetterReplayOutcome()
        for record in records {
            outcome.replayed += 1
            if outcome.unanswered[Self.unreachable] != nil {
                // The webhook was not there for a whole `patience`: the rest would wait as long each.
                outcome.unanswered[Self.notTried, default: 0] += 1
                continue
            }
            switch await verdict(for: record.raw, client) {
            case .committed: outcome.processed += 1
            case .duplicate: outcome.duplicates += 1
            case .refused(let reason): outcome.refusedByReason[reason, default: 0] += 1
            case .unanswered(let what): outcome.unanswered[what, default: 0] += 1
            }
        }
        try await client.shutdown()
        return outcome
    }

    private func verdict(for body: [UInt8], _ client: HTTPClient) async -> Verdict {
        let deadline = ContinuousClock.now + patience
        var last = "no answer"
        while true {
            var request = HTTPClientRequest(url: url)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(bytes: body))
            do {
                let response = try await client.execute(request, timeout: .seconds(60))
                let answer = try await response.body.collect(upTo: 64 << 10)
                switch response.status.code {
                case 200: return Self.verdict(answer: Array(answer.readableBytesView))
                case 429, 502, 503, 504: last = "HTTP \(response.status.code)"
                default: return .unanswered("HTTP \(response.status.code)")
                }
            } catch {
                last = Self.unreachable
            }
            guard ContinuousClock.now + .seconds(1) < deadline else { return .unanswered(last) }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// A 200's body: `{"status":"committed"}`, `{"status":"dropped","reason":"duplicate"}` or
    /// `{"status":"dead_lettered","reason":…}`.
    static func verdict(answer: [UInt8]) -> Verdict {
        let object = (try? JSONSerialization.jsonObject(with: Data(answer))) as? [String: Any]
        switch object?["status"] as? String {
        case "committed": return .committed
        case "dropped": return .duplicate
        case "dead_lettered": return .refused(reason: object?["reason"] as? String ?? "unknown")
        default: return .unanswered("an answer that is not the webhook's")
        }
    }
}
