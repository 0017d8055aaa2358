import Foundation
import SignetTestSupport
import Testing

/// A listener that cannot start is a setting to fix, said in an operator's words: exit 2,
/// which listener, which address, which key, and no networking-library internals.
@Suite("listeners that cannot start (the binary, the shipped webhook pipeline)", .tags(.endToEnd), .serialized)
struct ListenFailureTests {
    static let pipeline = FixturePaths.packageRoot.appendingPathComponent("Pipelines/webhook.yaml").path

    func run(_ environment: [String: String]) async throws -> (result: SignetProcess.Result, failure: String) {
        let directory = try TemporaryDirectory(prefix: "signet-listen")
        defer { directory.remove() }
        var environment = environment
        environment["SIGNET_BUNDLE_ID"] = "com.example.listen"
        environment["SIGNET_DATA_DIR"] = directory.url.path
        for key in ["SIGNET_HTTP_ADDRESS", "SIGNET_ADMIN_ADDRESS"] where environment[key] == nil {
            environment[key] = "127.0.0.1:\(try freeLocalPort())"
        }
        let summary = directory.path("summary.json")
        let result = try await SignetProcess.output(
            ["run", "--pipeline", Self.pipeline, "--summary-json", summary], environment: environment, timeout: 60)
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: summary))) as? [String: Any]
        return (result, object?["failure"] as? String ?? "")
    }

    func expectOperatorWording(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
        for leak in ["bind(descriptor", "errno", "SocketAddressError", "IOError", "NIO"] {
            #expect(!text.contains(leak), "networking internals in: \(text)", sourceLocation: sourceLocation)
        }
    }

    @Test("the webhook's port taken by another process: exit 2, the listener, address, key and cause named")
    func webhookPortInUse() async throws {
        let taken = try LocalPortHolder(listening: true)
        defer { taken.close() }
        let (result, failure) = try await run(["SIGNET_HTTP_ADDRESS": "127.0.0.1:\(taken.port)"])
        #expect(result.exitCode == 2, "\(result.stderr)")
        let line = "cannot listen on 127.0.0.1:\(taken.port) for the webhook (source.address): the address is already in use"
        #expect(result.stderr.contains(line), "\(result.stderr)")
        #expect(failure.contains(line), "--summary-json failure: \(failure)")
        expectOperatorWording(result.stderr)
    }

    @Test("the operators' listener's port taken: exit 2, named as such (it used to print only NIO's bind error)")
    func adminPortInUse() async throws {
        let taken = try LocalPortHolder(listening: true)
        defer { taken.close() }
        let (result, failure) = try await run(["SIGNET_ADMIN_ADDRESS": "127.0.0.1:\(taken.port)"])
        #expect(result.exitCode == 2, "\(result.stderr)")
        let line = "cannot listen on 127.0.0.1:\(taken.port) for the operators' listener (http.address): the address is already in use"
        #expect(result.stderr.contains(line), "\(result.stderr)")
        #expect(failure.contains(line), "--summary-json failure: \(failure)")
        expectOperatorWording(result.stderr)
    }

    @Test("an address this machine does not have, a host that does not resolve: exit 2, said plainly")
    func addressesThatCannotBeBound() async throws {
        // 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of this machine.
        let foreign = try await run(["SIGNET_HTTP_ADDRESS": "192.0.2.1:8080"])
        #expect(foreign.result.exitCode == 2, "\(foreign.result.stderr)")
        #expect(foreign.result.stderr.contains(
            "cannot listen on 192.0.2.1:8080 for the webhook (source.address): no network interface of this machine has that address"),
            "\(foreign.result.stderr)")
        expectOperatorWording(foreign.result.stderr)

        let unknown = try await run(["SIGNET_HTTP_ADDRESS": "no-such-host.invalid:8080"])
        #expect(unknown.result.exitCode == 2, "\(unknown.result.stderr)")
        #expect(unknown.result.stderr.contains("the host name 'no-such-host.invalid' does not resolve"), "\(unknown.result.stderr)")
        expectOperatorWording(unknown.result.stderr)
    }
}
