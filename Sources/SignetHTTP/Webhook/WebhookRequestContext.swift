import Hummingbird
import NIOCore

/// Hummingbird's request context plus the connection, so a request whose body does not
/// arrive in time can be cut off (slowloris) instead of holding a connection slot.
struct WebhookRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        channel = source.channel
    }
}
