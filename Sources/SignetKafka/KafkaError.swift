import CRdKafka

/// A librdkafka failure: the error code, its name, and what Signet was doing.
public struct KafkaError: Error, Sendable, CustomStringConvertible {
    /// librdkafka's `rd_kafka_resp_err_t` value (negative for client-side errors,
    /// positive for broker errors), or nil for failures Signet detects itself.
    public var code: Int32?
    /// A readable description including librdkafka's own message.
    public var message: String

    public init(_ message: String, code: Int32? = nil) {
        self.message = message
        self.code = code
    }

    init(_ context: String, error: rd_kafka_resp_err_t) {
        let name = String(cString: rd_kafka_err2name(error))
        let text = String(cString: rd_kafka_err2str(error))
        self.init("\(context): \(name): \(text)", code: error.rawValue)
    }

    /// Takes ownership of an `rd_kafka_error_t` (destroys it) and describes it.
    init(_ context: String, consuming error: OpaquePointer) {
        let name = String(cString: rd_kafka_error_name(error))
        let text = String(cString: rd_kafka_error_string(error))
        let code = rd_kafka_error_code(error).rawValue
        rd_kafka_error_destroy(error)
        self.init("\(context): \(name): \(text)", code: code)
    }

    public var description: String { "kafka: \(message)" }
}
