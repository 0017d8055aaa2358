import Foundation
package import SignetCore
package import SignetJWS
package import SignetState
import SignetTestSupport

/// A decoded event as published (from the output bytes, not the typed value).
package struct PublishedEvent {
    package let json: [String: Any]
    package let bytes: [UInt8]
    package let headers: [String: String]
    package var type: String { json["type"] as? String ?? "" }
    package var eventId: String { json["eventId"] as? String ?? "" }
    package var state: String? { json["state"] as? String }
    package var entitled: Bool { json["entitled"] as? Bool ?? false }
}

/// What one batch did.
package struct BatchResult {
    package var events: [PublishedEvent] = []
    package var dropped = 0
    package var rejected: [RecordRejection] = []
    package var batch: RecordBatch
}

/// `dedupe` + `transition` over one store, driven the way the runner drives them.
package final class StateHarness {
    package let store: any StoreRoles
    package let dedupe: DedupeStage
    package let transition: TransitionStage
    private var line: Int64 = 0
    private let executor = BlockingExecutor(label: "signet.test.state-harness")

    package init(
        store: any StoreRoles, policy: TransitionPolicy = TransitionPolicy(), useDedupe: Bool = true,
        configure: (inout TransitionStage.Options) -> Void = { _ in }
    ) {
        self.store = store
        var options = TransitionStage.Options()
        options.policy = policy
        configure(&options)
        self.dedupe = DedupeStage(store: store)
        self.transition = TransitionStage(store: store, options: options)
        self.useDedupe = useDedupe
    }

    package let useDedupe: Bool

    /// Runs one batch through the stages; acknowledges it unless told not to.
    @discardableResult
    package func run(_ payloads: [VerifiedPayload], acknowledge: Bool = true) async throws -> BatchResult {
        var batch = RecordBatch(records: payloads.map { payload in
            line += 1
            return Fixture.record(payload, line: line)
        })
        // On a thread of its own, as the runner does: store calls block (a PostgreSQL store
        // retrying through an outage blocks for seconds), which on the cooperative pool would
        // stall the tests running beside this one.
        try await withTaskExecutorPreference(executor) {
            if useDedupe { try await dedupe.process(&batch) }
            try await transition.process(&batch)
            if acknowledge {
                try await transition.acknowledge(batch)
                if useDedupe { try await dedupe.acknowledge(batch) }
            }
        }
        return Self.result(of: batch)
    }

    /// One expiry sweep at `instant`, acknowledged (delivered) unless told not to; its events.
    package func sweep(at instant: Int64, acknowledge: Bool = true) async throws -> [PublishedEvent] {
        try await withTaskExecutorPreference(executor) {
            guard let batch = try transition.sweep(at: instant, limit: 1000) else { return [] }
            if acknowledge { try await transition.acknowledge(batch) }
            return Self.result(of: batch).events
        }
    }

    /// Runs each payload as its own batch; returns all events.
    package func runEach(_ payloads: [VerifiedPayload]) async throws -> [PublishedEvent] {
        var events: [PublishedEvent] = []
        for payload in payloads { events += try await run([payload]).events }
        return events
    }

    package static func result(of batch: RecordBatch) -> BatchResult {
        var result = BatchResult(batch: batch)
        for record in batch.records {
            switch record.status {
            case .active:
                for message in record.outputs {
                    let object = (try? JSONSerialization.jsonObject(with: Data(message.value))) as? [String: Any] ?? [:]
                    var headers: [String: String] = [:]
                    for header in message.headers { headers[header.name] = String(decoding: header.value, as: UTF8.self) }
                    result.events.append(PublishedEvent(json: object, bytes: message.value, headers: headers))
                }
            case .dropped: result.dropped += 1
            case .rejected(let rejection, _): result.rejected.append(rejection)
            }
        }
        return result
    }
}
