// The floor under the webhook benchmark (scripts/bench_http.py): what any POST of a
// notification costs on this machine before Signet does anything with it. The same Hummingbird
// as the webhook's listener (one package, one resolved version), a route that reads the whole
// body as the webhook does and answers 200 at once: no pipeline, no state, no commit.
//
//   swift build -c release --product signet-http-floor
//   .build/release/signet-http-floor 127.0.0.1:8099
import Foundation
import Hummingbird
import NIOCore

let argument = CommandLine.arguments.dropFirst().first ?? "127.0.0.1:8099"
guard let colon = argument.lastIndex(of: ":"), let port = Int(argument[argument.index(after: colon)...]) else {
    print("usage: signet-http-floor HOST:PORT")
    exit(64)
}
let host = String(argument[..<colon])

let router = Router()
router.post("/notifications") { request, _ -> Response in
    // The webhook's limit for a body (max_body_bytes' default), read whole before answering.
    let body = try await request.body.collect(upTo: 1 << 20)
    var answer = ByteBuffer()
    answer.writeString(#"{"bytes":\#(body.readableBytes)}"# + "\n")
    return Response(status: .ok, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: answer))
}
let app = Application(router: router, configuration: .init(address: .hostname(host, port: port)))
try await app.runService()
