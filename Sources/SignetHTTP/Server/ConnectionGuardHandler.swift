import NIOCore
import NIOHTTP1

/// Closes an HTTP/1 connection as soon as its answer is written when the connection cannot
/// be reused: the request was answered before its body was read (404, 405, 413, 415, 503),
/// or the client asked for no keep-alive (HTTP/1.0 without `keep-alive`, `Connection: close`).
///
/// Without it, Hummingbird reads an unread body to its end to reach the next request, with
/// no deadline: a client declaring a terabyte and sending a byte a second holds a
/// connection slot for as long as it likes, and a fast one makes the server read without
/// end. Here the answer carries `Connection: close`; then the output is shut (the client
/// reads the answer and EOF) and the connection closes fully when the client closes its
/// side, after `linger`, or once more than `maxDiscardBytes` arrived, whichever is first.
/// What arrives meanwhile is discarded, never parsed or buffered. The short linger keeps
/// the kernel from answering unread input with a reset that could destroy the answer
/// before the client read it.
///
/// Sits between NIOHTTP1's request decoder and Hummingbird's HTTP-types codec (it needs
/// the request's HTTP version); ``GuardedHTTP1Channel`` puts it there.
final class ConnectionGuardHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// How long and how much a closing connection may still send.
    struct Limits: Sendable {
        var linger: TimeAmount
        var maxDiscardBytes: Int
    }

    private let limits: Limits
    /// A request's head arrived and its end has not.
    private var requestOpen = false
    private var keepAlive = true
    /// The last answer was written: input is discarded until the connection closes.
    private var closing = false
    private var discarded = 0
    private var lingerTimer: Scheduled<Void>?

    init(limits: Limits) {
        self.limits = limits
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if closing {
            if case .body(let buffer) = part {
                discarded += buffer.readableBytes
                if discarded > limits.maxDiscardBytes { context.close(promise: nil) }
            }
            return
        }
        switch part {
        case .head(let head):
            requestOpen = true
            keepAlive = head.isKeepAlive
        case .end:
            requestOpen = false
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let mustClose = requestOpen || !keepAlive
        switch unwrapOutboundIn(data) {
        case .head(var head) where mustClose:
            head.headers.replaceOrAdd(name: "connection", value: "close")
            context.write(wrapOutboundOut(.head(head)), promise: promise)
        case .end where mustClose && !closing:
            closing = true
            let bodyUnread = requestOpen
            let written = context.eventLoop.makePromise(of: Void.self)
            if let promise { written.futureResult.cascade(to: promise) }
            context.writeAndFlush(data, promise: written)
            written.futureResult.assumeIsolated().whenComplete { [self] _ in
                guard bodyUnread else {
                    context.close(promise: nil)
                    return
                }
                lingerTimer = context.eventLoop.assumeIsolated().scheduleTask(in: limits.linger) {
                    context.close(promise: nil)
                }
                let shut = context.eventLoop.makePromise(of: Void.self)
                context.close(mode: .output, promise: shut)
                // A channel that cannot half-close closes fully.
                shut.futureResult.assumeIsolated().whenFailure { _ in context.close(promise: nil) }
            }
        default:
            context.write(data, promise: promise)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        lingerTimer?.cancel()
        lingerTimer = nil
        context.fireChannelInactive()
    }
}
