import Dispatch
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
@testable import SignetHTTP
import SignetTestSupport
import Testing

/// Where a connection's task runs: the webhook's on its channel's event loop (the request is
/// read and answered on the socket's thread), every other listener's on Swift's pool.
@Suite("a connection's task on its event loop")
struct EventLoopTaskExecutorTests {
    @Test("a task that prefers a loop runs on it, and resumes on it when another thread wakes it")
    func taskRunsOnLoop() async {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let (before, after) = await withTaskExecutorPreference(EventLoopTaskExecutor(loop)) {
            let before = loop.inEventLoop
            // Resumed from a dispatch thread, as a stage's commit resumes a waiting request.
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume() }
            }
            return (before, loop.inEventLoop)
        }
        #expect(before)
        #expect(after)
        #expect(!loop.inEventLoop)
    }

    @Test("a guarded listener answers from the connection's event loop only when asked to", arguments: [true, false])
    func guardedChannel(onEventLoop: Bool) async throws {
        // The handler suspends first, as the webhook's does while its record is committed.
        let responder = CallbackResponder { (_: Request, context: WebhookRequestContext) in
            await withCheckedContinuation { continuation in
                DispatchQueue.global().async { continuation.resume() }
            }
            let onLoop = context.channel.eventLoop.inEventLoop
            return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: onLoop ? "on-loop" : "off-loop")))
        }
        let port = AsyncStream<Int>.makeStream()
        let quiet = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let application = Application(
            responder: responder,
            server: GuardedHTTP1Channel.builder(
                idleTimeout: .seconds(5), limits: .init(linger: .seconds(1), maxDiscardBytes: 1024),
                idle: IdleConnections(listener: "test"), onEventLoop: onEventLoop),
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: nil),
            onServerRunning: { channel in
                port.continuation.yield(channel.localAddress?.port ?? 0)
                port.continuation.finish()
            },
            logger: quiet)
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: [application], logger: quiet))
        let server = Task { try await group.run() }
        var bound = 0
        for await value in port.stream { bound = value }
        let answer = try await curl("http://127.0.0.1:\(bound)/")
        await group.triggerGracefulShutdown()
        _ = try? await server.value
        #expect(answer == (onEventLoop ? "on-loop" : "off-loop"))
    }
}
