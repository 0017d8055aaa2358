/// One unit of work flowing through a pipeline: an input exactly as it arrived, where
/// it came from, what stages learned about it, and what it should publish.
///
/// Stages add typed parts (`record[SomeKey.self] = value`) instead of growing this
/// type, so an embedding service can attach its own data without touching Signet.
public struct Record: Sendable {
    /// The input bytes exactly as the source delivered them (kept for the dead-letter sink).
    public let raw: [UInt8]
    /// Where the input came from; committed back to the source once the record is done.
    public let position: SourcePosition
    /// What happens to the record next.
    public private(set) var status: Status = .active
    /// Messages to publish once the record has passed every stage.
    public var outputs: [OutputMessage] = []
    /// When the input was written at its source, in milliseconds since 1970 (a Kafka
    /// message's timestamp); nil when the source does not know. The runner measures
    /// end-to-end latency from it.
    public var sourceTimestamp: Int64?
    /// Typed parts by key type; its outcome keeps them (``RecordOutcome/subscript(_:)``).
    @usableFromInline var parts = RecordParts()

    /// A record of `raw`, read at `position`, active, with no outputs.
    public init(raw: [UInt8], position: SourcePosition) {
        self.raw = raw
        self.position = position
    }

    /// Where a record stands.
    public enum Status: Sendable, Equatable {
        /// Still travelling through the stages.
        case active
        /// Turned away: goes to the dead-letter sink with its reason.
        case rejected(RecordRejection, stage: String)
        /// Finished on purpose without output (for example a retry that `dedupe` recognised).
        case dropped(reason: String)
    }

    /// Whether no stage rejected or dropped it: later stages process it and its outputs go out.
    public var isActive: Bool { status == .active }

    /// Sends the record to the dead-letter sink; later stages skip it.
    public mutating func reject(_ rejection: RecordRejection, stage: String) {
        guard isActive else { return }
        status = .rejected(rejection, stage: stage)
        outputs.removeAll()
    }

    /// Ends the record without output or error; its position is still committed.
    public mutating func drop(reason: String) {
        guard isActive else { return }
        status = .dropped(reason: reason)
        outputs.removeAll()
    }

    /// Typed storage for what stages learn about the record.
    ///
    /// Inlinable so each stage's module specializes it for its key types: a part is read and
    /// written several times per record, and the generic version paid for type metadata
    /// lookups on every access.
    @inlinable
    public subscript<Key: RecordPartKey>(_ key: Key.Type) -> Key.Value? {
        get { parts[key] }
        set { parts[key] = newValue }
    }
}

/// The full length of an input the source could keep only the beginning of (a line over
/// `max_line_bytes`), so the dead-letter record reports the truth.
package enum OriginalInputLengthPart: RecordPartKey {
    public typealias Value = Int
}

/// Names a typed slot on a ``Record``; the key type itself is the identity. By convention
/// its name ends in `Part` (`VerifiedPayloadPart`, `DedupeKeyPart`).
///
/// ```swift
/// enum TenantPart: RecordPartKey { typealias Value = String }
/// record[TenantPart.self] = "acme"
/// ```
public protocol RecordPartKey {
    /// The type of the value stored under this key.
    associatedtype Value: Sendable
}

/// Where a record came from: a line of a file, a Kafka offset, ...
public struct SourcePosition: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The stream: a file path, `stdin`, or a Kafka topic.
    public var stream: String
    /// Kafka partition; nil for line-oriented sources.
    public var partition: Int32?
    /// Kafka offset, or the 1-based line number for line-oriented sources.
    public var offset: Int64
    /// For files: the byte offset just past this record, where a resumed read starts.
    public var resumeByteOffset: Int64?

    /// A position in `stream` (and Kafka `partition`) at `offset`.
    public init(stream: String, partition: Int32? = nil, offset: Int64, resumeByteOffset: Int64? = nil) {
        self.stream = stream
        self.partition = partition
        self.offset = offset
        self.resumeByteOffset = resumeByteOffset
    }

    public var description: String {
        if let partition { return "\(stream)[\(partition)]@\(offset)" }
        return "\(stream):\(offset)"
    }
}

/// A message for the sinks: an optional key, a value, headers, and optionally the
/// names of the sinks it is meant for.
public struct OutputMessage: Sendable, Equatable {
    /// The message key (an event's `originalTransactionId`): Kafka partitions by it.
    public var key: [UInt8]?
    /// The message body (an event's JSON).
    public var value: [UInt8]
    /// Metadata the sinks carry along (Kafka headers, HTTP headers).
    public var headers: [Header]
    /// The sinks (by their name in the pipeline) that receive it; nil means every sink.
    public var routes: [String]?

    /// A message; `routes` nil sends it to every sink.
    public init(key: [UInt8]? = nil, value: [UInt8], headers: [Header] = [], routes: [String]? = nil) {
        self.key = key
        self.value = value
        self.headers = headers
        self.routes = routes
    }

    /// One header: a name and its bytes.
    public struct Header: Sendable, Equatable {
        /// The header's name.
        public var name: String
        /// The header's value.
        public var value: [UInt8]
        /// A header of raw bytes.
        public init(_ name: String, _ value: [UInt8]) {
            self.name = name
            self.value = value
        }
        /// A header of UTF-8 text.
        public init(_ name: String, _ value: String) { self.init(name, Array(value.utf8)) }
    }

    /// Whether a sink of this name should receive the message.
    public func isRouted(to sink: String) -> Bool { routes?.contains(sink) ?? true }

    /// The value of the first header called `name`, as text.
    public func header(_ name: HeaderName) -> String? {
        headers.first { $0.name == name.rawValue }.map { String(decoding: $0.value, as: UTF8.self) }
    }
}

extension OutputMessage {
    /// The headers Signet itself sets, named once: the runner, the sinks and the stages
    /// that read them all use these.
    public struct HeaderName: RawRepresentable, Hashable, Sendable {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// An entitlement-change event's deterministic id.
        public static let eventId = HeaderName(rawValue: "signet-event-id")
        /// An entitlement-change event's type (`signet_events_total` counts by it).
        public static let eventType = HeaderName(rawValue: "signet-event-type")
        /// An entitlement-change event's environment (`Sandbox`, `Production`).
        public static let environment = HeaderName(rawValue: "signet-environment")
        /// An entitlement-change event's product id.
        public static let productId = HeaderName(rawValue: "signet-product-id")
        /// A dead letter's reason code (docs/reason-codes.md).
        public static let reason = HeaderName(rawValue: "signet-reason")
        /// A dead letter's human-readable detail (why, in words).
        public static let detail = HeaderName(rawValue: "signet-detail")
        /// The stage (or `sinks.<name>`) that rejected the record.
        public static let stage = HeaderName(rawValue: "signet-stage")
        /// The rejected record's source position.
        public static let source = HeaderName(rawValue: "signet-source")
        /// A dead letter's stable id (the same input and reason give the same id, so retries collapse).
        public static let deadLetterId = HeaderName(rawValue: "signet-dead-letter-id")
    }
}

extension OutputMessage.Header {
    /// A header under one of Signet's names.
    public init(_ name: OutputMessage.HeaderName, _ value: String) { self.init(name.rawValue, value) }
}
