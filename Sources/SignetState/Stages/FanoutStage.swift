public import SignetCore

/// `fanout`: routes entitlement-change events to sinks by rule (event type, environment,
/// product), using the headers `transition` puts on each message, so outbox
/// redeliveries (which carry only their messages) are routed the same way.
///
/// A message goes to the union of the sinks of every matching route, or to
/// `default_sinks` when none matches (no sink at all when that is empty). Messages that
/// are not entitlement events (no `signet-event-type` header) are left untouched.
public struct FanoutStage: Stage {
    public let name = "fanout"
    /// The routes, in order: an event goes to the sinks of every route it matches.
    public let routes: [FanoutRoute]
    /// Where an event that matches no route goes (empty: no sink).
    public let defaultSinks: [String]

    /// A stage routing by `routes`, the rest to `defaultSinks`.
    public init(routes: [FanoutRoute], defaultSinks: [String] = []) {
        self.routes = routes
        self.defaultSinks = defaultSinks
    }

    public func process(_ batch: inout RecordBatch) async throws {
        for index in batch.records.indices where batch.records[index].isActive {
            for output in batch.records[index].outputs.indices {
                let message = batch.records[index].outputs[output]
                guard let type = message.header(.eventType) else { continue }
                batch.records[index].outputs[output].routes = sinks(
                    type: type, environment: message.header(.environment), product: message.header(.productId))
            }
        }
    }

    /// The sinks for an event with these attributes.
    public func sinks(type: String?, environment: String?, product: String?) -> [String] {
        var chosen: [String] = []
        for route in routes where route.matches(type: type, environment: environment, product: product) {
            for sink in route.sinks where !chosen.contains(sink) { chosen.append(sink) }
        }
        return chosen.isEmpty ? defaultSinks : chosen
    }
}
