import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import Synchronization

/// Gathers one App Store Server API answer on the connection's event loop and hands it over
/// once, as status, headers and the body's bytes.
///
/// AsyncHTTPClient's streaming response hands every socket read to the awaiting task (a page of
/// 20 notifications is a dozen reads), two thread hops each; its `ResponseAccumulator` grows a
/// buffer by doubling and the caller then copies it out. This collector reserves the announced
/// `Content-Length` and copies each read once, into the array the caller decodes.
final class AppStoreAPIResponseCollector: HTTPClientResponseDelegate {
    struct Response: Sendable {
        var status: HTTPResponseStatus
        var headers: HTTPHeaders
        var body: [UInt8]
    }

    /// The answer was larger than ``maximumBytes`` (announced or received).
    struct TooLarge: Error, CustomStringConvertible {
        var maximumBytes: Int
        var description: String { "the answer is larger than \(maximumBytes) bytes" }
    }

    private struct Collected {
        var head: HTTPResponseHead?
        var body: [UInt8] = []
    }

    private let maximumBytes: Int
    // Called on one event loop, one callback after the other; the lock only makes that
    // provable to the compiler (uncontended, so it costs a few nanoseconds per read).
    private let collected = Mutex(Collected())

    init(maximumBytes: Int) {
        self.maximumBytes = maximumBytes
    }

    func didReceiveHead(task: HTTPClient.Task<Response>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        let announced = head.headers.first(name: "Content-Length").flatMap { Int($0) }
        if let announced, announced > maximumBytes {
            return task.eventLoop.makeFailedFuture(TooLarge(maximumBytes: maximumBytes))
        }
        collected.withLock { collected in
            collected.head = head
            if let announced { collected.body.reserveCapacity(announced) }
        }
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Response>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        let fits = collected.withLock { collected -> Bool in
            guard collected.body.count + buffer.readableBytes <= maximumBytes else { return false }
            buffer.withUnsafeReadableBytes { collected.body.append(contentsOf: $0) }
            return true
        }
        return fits ? task.eventLoop.makeSucceededVoidFuture() : task.eventLoop.makeFailedFuture(TooLarge(maximumBytes: maximumBytes))
    }

    func didFinishRequest(task: HTTPClient.Task<Response>) throws -> Response {
        try collected.withLock { collected in
            guard let head = collected.head else { throw HTTPClientError.remoteConnectionClosed }
            defer { collected.body = [] }
            return Response(status: head.status, headers: head.headers, body: collected.body)
        }
    }
}
