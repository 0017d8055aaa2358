import AppStoreModels
import ArgumentParser
import Foundation
import SignetCore
import SignetJWS
import SignetOpenSSL

struct DecodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Shows what a notification says WITHOUT verifying it (for debugging only).",
        discussion: """
            Prints, per input line, the JWS header and payload as JSON, with the nested signedTransactionInfo and signedRenewalInfo decoded too. Nothing is verified: every object carries "verified": false. Use `signet verify` or a pipeline to trust anything.

            Example:
              head -1 notifications.ndjson | signet decode
              head -1 notifications.ndjson | signet decode --pretty
            """)

    @Argument(help: "NDJSON files (default: stdin).")
    var files: [String] = []

    @Flag(help: "Indent each object over several lines (keys sorted) instead of one line per input.")
    var pretty = false

    func validate() throws {
        try InputFiles.validate(files)
    }

    func run() async throws {
        signal(SIGPIPE, SIG_IGN)
        var options = LineSource.Options()
        options.skipBlankLines = false
        let inputs = InputFiles.sources(files, options: options)
        var failed = false
        for source in inputs {
            try await source.open()
            while let records = try await source.nextBatch(maxRecords: 256) {
                for record in records {
                    var json = JSONText()
                    json.beginObject()
                    if files.count > 1 { json.field("file", source.stream) }
                    json.key("line"); json.int(record.position.offset)
                    json.key("verified"); json.bool(false)
                    do throws(RecordRejection) {
                        if case .rejected(let rejection, _) = record.status { throw rejection }
                        let envelope = try DecodeStage.envelope(from: record.raw)
                        json.key("kind"); json.string(envelope.kind.rawValue)
                        try Self.writeParts(of: envelope.jws, into: &json, nested: true)
                        // A status line (Get All Subscription Statuses) carries its renewal info beside the transaction.
                        if envelope.kind == .status, let renewal = envelope.renewalJWS {
                            json.field("status", envelope.status)
                            json.key("signedRenewalInfo"); json.beginObject()
                            try Self.writeParts(of: renewal, into: &json, nested: false)
                            json.endObject()
                        }
                    } catch {
                        failed = true
                        json.key("error"); json.string(error.reason.rawValue)
                        json.key("detail"); json.string(error.detail)
                    }
                    json.endObject()
                    try Terminal.printLine(pretty ? Self.indented(json.bytes) : json.bytes)
                }
            }
            try await source.close()
        }
        if failed { throw ExitCode.failure }
    }

    /// `bytes` (one JSON object) over several lines with sorted keys; as is if it does not parse.
    private static func indented(_ bytes: [UInt8]) -> [UInt8] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(bytes)),
            let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else { return bytes }
        return Array(data)
    }

    /// Writes "header" and "payload" (and the nested JWS of a notification payload).
    private static func writeParts(of jws: String, into json: inout JSONText, nested: Bool) throws(RecordRejection) {
        let segments = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else { throw RecordRejection(.malformedJWS, "expected 3 segments, found \(segments.count)") }
        let header: [UInt8]
        let payload: [UInt8]
        do {
            header = try Base64.decodeURL(String(segments[0]))
            payload = try Base64.decodeURL(String(segments[1]))
        } catch {
            throw RecordRejection(.malformedJWS, "a segment is not base64url: \(error)")
        }
        // The strict RFC 8259 reader (docs/json.md), as in `verify`: what this prints verbatim
        // is then valid UTF-8 JSON, and a header `verify` would refuse is refused here too.
        let payloadObject: JSONElement
        do {
            guard try JSONElement.parse(header).isObject else { throw RecordRejection(.malformedJWS, "the header is not a JSON object") }
            payloadObject = try JSONElement.parse(payload)
            guard payloadObject.isObject else { throw RecordRejection(.malformedJWS, "the payload is not a JSON object") }
        } catch let rejection as RecordRejection {
            throw rejection
        } catch {
            throw RecordRejection(.malformedJWS, "the header or payload is not valid JSON (\(error))")
        }
        json.key("header"); json.raw(header)
        json.key("payload"); json.raw(payload)
        guard nested, let data = payloadObject["data"], data.isObject else { return }
        for field in ["signedTransactionInfo", "signedRenewalInfo"] {
            guard let inner = data[field]?.stringValue else { continue }
            json.key(field); json.beginObject()
            do throws(RecordRejection) {
                try writeParts(of: inner, into: &json, nested: false)
            } catch {
                json.key("error"); json.string(error.reason.rawValue)
            }
            json.endObject()
        }
    }
}
