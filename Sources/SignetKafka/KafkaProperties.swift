import Logging
import CRdKafka
public import SignetCore

/// One librdkafka configuration property (`name=value`, exactly as librdkafka names
/// it), with the place in the pipeline file it came from so a rejected property is
/// reported at its own line and column.
public struct KafkaProperty: Sendable, Hashable {
    public var name: String
    public var value: String
    /// Where the property was written; nil for properties set in code.
    public var location: ConfigLocation?

    public init(_ name: String, _ value: String, location: ConfigLocation? = nil) {
        self.name = name
        self.value = value
        self.location = location
    }
}

/// Owns an `rd_kafka_conf_t` until `rd_kafka_new` takes it over.
///
/// librdkafka frees the configuration itself once `rd_kafka_new` succeeds, so
/// ``take()`` hands the pointer out exactly once and deinit frees it only if nobody
/// took it (a failed build or a lint-only validation).
final class KafkaConf {
    private var pointer: OpaquePointer?

    init() {
        pointer = rd_kafka_conf_new()
    }

    deinit {
        if let pointer { rd_kafka_conf_destroy(pointer) }
    }

    /// The live pointer, for the `rd_kafka_conf_set_*_cb` setters.
    var raw: OpaquePointer {
        guard let pointer else { preconditionFailure("KafkaConf used after rd_kafka_new took it") }
        return pointer
    }

    /// Sets one property; librdkafka's own complaint becomes a ``ConfigError`` at the
    /// property's location (or at `fallback` for properties Signet sets itself).
    func set(_ property: KafkaProperty, fallback: ConfigLocation? = nil) throws(ConfigError) {
        var errorText = [CChar](repeating: 0, count: 512)
        let result = rd_kafka_conf_set(raw, property.name, property.value, &errorText, errorText.count)
        guard result != RD_KAFKA_CONF_OK else { return }
        let detail = String(decoding: errorText.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let kind = result == RD_KAFKA_CONF_UNKNOWN ? "unknown librdkafka property" : "invalid librdkafka property"
        throw ConfigError("\(kind) '\(property.name)': \(detail)", at: property.location ?? fallback)
    }

    /// Applies `properties` in order (later ones win, as with librdkafka itself).
    func set(_ properties: [KafkaProperty], fallback: ConfigLocation? = nil) throws(ConfigError) {
        for property in properties { try set(property, fallback: fallback) }
    }

    /// Hands the configuration to `rd_kafka_new`; this object no longer frees it.
    func take() -> OpaquePointer {
        let taken = raw
        pointer = nil
        return taken
    }
}

/// Creates an `rd_kafka_t` of the given type, taking over `conf` on success.
func makeKafkaHandle(_ type: rd_kafka_type_t, conf: KafkaConf, what: String) throws -> OpaquePointer {
    var errorText = [CChar](repeating: 0, count: 512)
    // rd_kafka_new frees the conf only on success; on failure it stays ours.
    let raw = conf.raw
    guard let handle = rd_kafka_new(type, raw, &errorText, errorText.count) else {
        let detail = String(decoding: errorText.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        throw KafkaError("cannot create \(what): \(detail)")
    }
    _ = conf.take()
    return handle
}

/// Routes librdkafka's log lines (syslog levels 0-7) to Signet's logger.
///
/// librdkafka calls this from its own threads with the handle's opaque, which Signet
/// always sets to a ``KafkaLogSink``-conforming object kept alive longer than the handle.
let kafkaLogCallback: @convention(c) (OpaquePointer?, Int32, UnsafePointer<CChar>?, UnsafePointer<CChar>?) -> Void = {
    handle, level, facility, text in
    guard let handle, let opaque = rd_kafka_opaque(handle) else { return }
    let sink = Unmanaged<AnyObject>.fromOpaque(opaque).takeUnretainedValue()
    guard let logSink = sink as? any KafkaLogSink else { return }
    logSink.kafkaLog(
        level: Int(level),
        facility: facility.map { String(cString: $0) } ?? "",
        message: text.map { String(cString: $0) } ?? "")
}

/// Receives librdkafka log lines (see ``kafkaLogCallback``).
protocol KafkaLogSink: AnyObject, Sendable {
    var logger: Logger { get }
}

extension KafkaLogSink {
    /// Maps syslog levels (librdkafka's) onto swift-log's.
    func kafkaLog(level: Int, facility: String, message: String) {
        let mapped: Logger.Level =
            switch level {
            case ...3: .error
            case 4: .warning
            case 5, 6: .info
            default: .debug
            }
        logger.log(level: mapped, "librdkafka \(facility): \(message)")
    }
}

extension Array where Element == CChar {
    /// The NUL-terminated prefix as a Swift string.
    var nulTerminatedString: String {
        String(decoding: prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
