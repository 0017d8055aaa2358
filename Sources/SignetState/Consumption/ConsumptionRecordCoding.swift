import Foundation

/// How the stores keep refund questions and ledger entries: one JSON document per row beside
/// the few columns they are looked up by, so a field added later needs no schema change (new
/// fields are optional) and SQL readers can still query it (PostgreSQL stores it as JSONB).
package enum ConsumptionRecordCoding {
    package static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    package static func decode<Value: Decodable>(_ type: Value.Type, from text: String) throws -> Value {
        try JSONDecoder().decode(type, from: Data(text.utf8))
    }

    /// `text` decoded, nil when there is none.
    package static func decode<Value: Decodable>(_ type: Value.Type, orNil text: String?) throws -> Value? {
        try text.map { try decode(type, from: $0) }
    }
}
