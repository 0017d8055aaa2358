public import SignetCore

/// A sink that receives entitlement-change events as values, for a service embedding the
/// state stages (``StatePipeline``).
///
/// Implement ``write(events:)``; the conformance to `Sink` is provided: each message's
/// bytes are read back with ``EntitlementEvent/init(json:)``. That includes the events a
/// crash left undelivered, which the outbox hands back as bytes. As with every sink, return
/// only once the events are safely where they go; throwing leaves the batch uncommitted and
/// the runner retries it.
///
/// ```swift
/// struct Grants: EntitlementEventSink {
///     func write(events: [EntitlementEvent]) async throws {
///         for event in events {
///             print(event.originalTransactionId ?? "-", event.type, event.entitled ? "has access" : "no access")
///         }
///     }
/// }
/// ```
public protocol EntitlementEventSink: Sink {
    /// Delivers the events of one batch, in order.
    func write(events: [EntitlementEvent]) async throws
}

extension EntitlementEventSink {
    public func write(_ messages: [OutputMessage]) async throws {
        var events: [EntitlementEvent] = []
        events.reserveCapacity(messages.count)
        for message in messages {
            do {
                events.append(try EntitlementEvent(json: message.value))
            } catch {
                // A wiring mistake, not bad input: no retry makes a document an event.
                throw SinkError(
                    "\(Self.self) received a message that is not an entitlement event (\(error)); "
                        + "route only a transition stage's events to it", isPermanent: true)
            }
        }
        try await write(events: events)
    }
}
