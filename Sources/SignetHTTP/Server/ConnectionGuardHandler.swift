import NIOCore
import NIOHTTP1

/// Closes an HTTP/1 connection as soon as its answer is written when the connection cannot
/// be reused: the request was answered before its body was read (404, 405, 413, 415, 503),
/// or the client asked for no keep-alive (HTTP/1.0 without `keep-alive`, `Connection: close`).
/// Between requests it offers its connection to the listener's ``IdleConnections``, which
/// closes it when a new client needs the slot.
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
/// the request's HTTP version); ``GuardedHTTP1Channel`` puts it there. Being in front of
/// NIOHTTP1's pipelining handler, it sees pipelined requests as they are decoded, before
/// the one in front of them is answered: each answer is matched with its own request.
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

    /// A request not yet answered.
    private struct Request {
        var keepAlive: Bool
        /// Its end arrived: the body was read in full.
        var complete = false
    }

    private let limits: Limits
    private let idleConnections: IdleConnections
    private let id: Int
    /// Requests in arrival order (more than one when pipelined); the first is being answered.
    private var requests = CircularBuffer<Request>(initialCapacity: 2)
    /// The answer being written closes the connection.
    private var answerCloses = false
    /// Offered to ``idleConnections``: answered, no request since.
    private var idle = false
    /// The last answer was written: input is discarded until the connection closes.
    private var closing = false
    /// A request that closes the connection arrived in full: what is pipelined behind it is
    /// discarded, never processed (RFC 9112, 9.6).
    private var takesNoMore = false
    private var discarded = 0
    private var lingerTimer: Scheduled<Void>?

    init(limits: Limits, idleConnections: IdleConnections) {
        self.limits = limits
        self.idleConnections = idleConnections
        self.id = idleConnections.register()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if closing || takesNoMore {
            if case .body(let buffer) = part {
                discarded += buffer.readableBytes
                if discarded > limits.maxDiscardBytes { context.close(promise: nil) }
            }
            return
        }
        switch part {
        case .head(let head):
            leaveIdle()
            requests.append(Request(keepAlive: head.isKeepAlive))
        case .end:
            if let last = requests.indices.last {
                requests[last].complete = true
                takesNoMore = !requests[last].keepAlive
            }
        case .body:
            break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head) where head.status.code < 200:
            // An interim answer (100 Continue): the final one follows and decides.
            context.write(data, promise: promise)
        case .head(var head):
            // No request to match (an answer to a request the decoder refused): never reused.
            let request = requests.first
            answerCloses = request.map { !$0.complete || !$0.keepAlive } ?? true
            if answerCloses {
                head.headers.replaceOrAdd(name: "connection", value: "close")
                context.write(wrapOutboundOut(.head(head)), promise: promise)
            } else {
                context.write(data, promise: promise)
            }
        case .end where answerCloses && !closing:
            closing = true
            let bodyUnread = !(requests.first?.complete ?? true)
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
        case .end where !closing:
            if !requests.isEmpty { requests.removeFirst() }
            let written = promise ?? context.eventLoop.makePromise(of: Void.self)
            context.write(data, promise: written)
            written.futureResult.assumeIsolated().whenSuccess { [self] in
                if requests.isEmpty, !closing, !idle, context.channel.isActive { becomeIdle(context: context) }
            }
        default:
            context.write(data, promise: promise)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        lingerTimer?.cancel()
        lingerTimer = nil
        leaveIdle()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        leaveIdle()
    }

    private func becomeIdle(context: ChannelHandlerContext) {
        idle = true
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        idleConnections.markIdle(id) { [eventLoop = context.eventLoop] done in
            eventLoop.execute { done(bound.value.handler.evict(context: bound.value.context)) }
        }
    }

    /// Closes the connection for a new client if it is still idle (a request head may have
    /// arrived since it was chosen: that request is answered, never cut).
    private func evict(context: ChannelHandlerContext) -> Bool {
        guard idle, requests.isEmpty, !closing, context.channel.isActive else { return false }
        idle = false
        closing = true
        context.close(promise: nil)
        return true
    }

    private func leaveIdle() {
        guard idle else { return }
        idle = false
        idleConnections.markBusy(id)
    }
}
