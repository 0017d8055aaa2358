public import Foundation
public import Logging
import Synchronization

/// A swift-log handler that writes one JSON object per line (for log shippers: Vector,
/// Fluent Bit, Loki): `time` (RFC 3339, UTC, milliseconds), `level`, `label`, `message`,
/// `source`, and every metadata key as a string field under `metadata`.
///
/// ```json
/// {"time":"2026-11-23T00:30:00.123Z","level":"debug","label":"signet","message":"batch committed","source":"SignetCore","metadata":{"records":"64"}}
/// ```
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let output: JSONLogOutput

    /// Writes to `fileDescriptor` (standard error by default).
    public init(label: String, fileDescriptor: Int32 = STDERR_FILENO, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.output = JSONLogOutput.shared(for: fileDescriptor)
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        output.write(Self.line(
            time: Date(), level: event.level, label: label, message: event.message.description, source: event.source, metadata: merged))
    }

    /// One log line (without the newline).
    static func line(
        time: Date, level: Logger.Level, label: String, message: String, source: String, metadata: Logger.Metadata
    ) -> [UInt8] {
        var json = JSONText()
        json.beginObject()
        json.key("time"); json.string(time.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)))
        json.key("level"); json.string(level.rawValue)
        json.key("label"); json.string(label)
        json.key("message"); json.string(message)
        json.key("source"); json.string(source)
        if !metadata.isEmpty {
            json.key("metadata"); json.beginObject()
            for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
                json.key(key); json.string(value.description)
            }
            json.endObject()
        }
        json.endObject()
        return json.bytes
    }
}

/// Serialises whole lines to one file descriptor, so concurrent log calls never interleave.
final class JSONLogOutput: Sendable {
    private let fileDescriptor: Int32
    private let lock = Mutex(())
    private static let outputs = Mutex([Int32: JSONLogOutput]())

    private init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    static func shared(for fileDescriptor: Int32) -> JSONLogOutput {
        outputs.withLock { table in
            if let existing = table[fileDescriptor] { return existing }
            let made = JSONLogOutput(fileDescriptor: fileDescriptor)
            table[fileDescriptor] = made
            return made
        }
    }

    func write(_ line: [UInt8]) {
        var bytes = line
        bytes.append(UInt8(ascii: "\n"))
        lock.withLock { _ in
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Foundation.write(fileDescriptor, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
                    if written <= 0 { return }  // a closed stderr: drop the line rather than spin
                    offset += written
                }
            }
        }
    }
}
