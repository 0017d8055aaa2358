import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import SignetCore

/// Hummingbird's HTTP/1 channel with a ``ConnectionGuardHandler`` in its pipeline: every
/// listener of Signet (the webhook, the admin listener) closes a connection that cannot be
/// reused right after its answer, instead of reading an unread body without a deadline,
/// and offers its idle keep-alive connections to the listener's ``IdleConnections``.
/// The webhook's connections also run their task on their channel's event loop
/// (``EventLoopTaskExecutor``).
struct GuardedHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value

    let channel: HTTP1Channel
    let limits: ConnectionGuardHandler.Limits
    let idle: IdleConnections
    /// Whether each connection's task runs on its channel's event loop (its handler must
    /// never block) rather than on Swift's cooperative pool.
    let onEventLoop: Bool

    /// A server builder for `Application(server:)`.
    /// - Parameters:
    ///   - idle: the listener's, shared with its ``ConnectionLimit``.
    ///   - onEventLoop: run each connection's task on its event loop; only for a responder
    ///     that never blocks (the webhook's).
    static func builder(
        idleTimeout: Duration, limits: ConnectionGuardHandler.Limits, idle: IdleConnections, onEventLoop: Bool = false
    ) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            GuardedHTTP1Channel(
                channel: HTTP1Channel(
                    responder: responder,
                    configuration: HTTP1Channel.Configuration(idleTimeout: .nanoseconds(idleTimeout.clampedNanoseconds))),
                limits: limits, idle: idle, onEventLoop: onEventLoop)
        }
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        self.channel.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // Right after NIOHTTP1's decoder, where the request's version is still known.
            let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try channel.pipeline.syncOperations.addHandler(ConnectionGuardHandler(limits: limits, idleConnections: idle), position: .after(decoder))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        guard onEventLoop else { return await channel.handle(value: value, logger: logger) }
        await withTaskExecutorPreference(EventLoopTaskExecutor(value.channel.eventLoop)) {
            await channel.handle(value: value, logger: logger)
        }
    }
}
