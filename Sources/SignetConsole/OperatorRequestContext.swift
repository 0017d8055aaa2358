public import Hummingbird
public import NIOCore

/// The request context of the operators' listener: Hummingbird's basic one and the client's
/// address, which the console's sign-in throttle keys on.
public struct OperatorRequestContext: RequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The peer's address (nil when the channel has none).
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
