import Foundation

/// The single decode entry point for Apple's JSON payloads.
///
/// Signet's own models (``ResponseBodyV2DecodedPayload``, ``JWSTransactionDecodedPayload``,
/// ``JWSRenewalInfoDecodedPayload`` and everything nested in them) are read by a hand-written
/// UTF-8 scanner, several times faster than `JSONDecoder`, with the same results: unknown
/// keys are ignored, `null` means absent, a wrong value type throws; unlike `JSONDecoder`, a
/// key the model reads may appear only once per object, and only RFC 8259 JSON is accepted
/// (docs/json.md). Any other `Decodable` goes through one consistently configured `JSONDecoder`,
/// which is more lenient: use it only for trusted input (untrusted JSON without a model goes
/// through the same strict parser, `JSONElement`, inside Signet).
public enum AppStoreJSON {
    /// Deepest allowed nesting of objects and arrays. Apple's payloads nest at most five levels;
    /// the cap bounds stack use on hostile input.
    public static let maximumDepth = 64

    /// Decodes `type` from UTF-8 JSON bytes. Throws ``AppStoreJSONError`` on any malformed input.
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: some Collection<UInt8>) throws -> T {
        if let fast = T.self as? any JSONFastDecodable.Type {
            let value = try bytes.withContiguousStorageIfAvailable { try decodeFast(fast, from: $0) }
                ?? Array(bytes).withUnsafeBufferPointer { try decodeFast(fast, from: $0) }
            // The dynamic cast above guarantees the type.
            return value as! T
        }
        return try decodeWithFoundation(type, from: Data(bytes))
    }

    /// Decodes `type` from raw bytes without copying them.
    public static func decode<T: Decodable>(_ type: T.Type, from buffer: UnsafeRawBufferPointer) throws -> T {
        try decode(type, from: buffer.bindMemory(to: UInt8.self))
    }

    /// Encodes any `Encodable` (models included) as compact JSON with sorted keys, so equal
    /// values give equal bytes.
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    private static func decodeFast(_ type: any JSONFastDecodable.Type, from buffer: UnsafeBufferPointer<UInt8>) throws -> any JSONFastDecodable {
        var reader = JSONReader(buffer, maxDepth: maximumDepth)
        try reader.checkEncoding()
        let value = try type.init(json: &reader)
        try reader.expectEnd()
        return value
    }

    private static func decodeWithFoundation<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        let decoder = JSONDecoder()
        decoder.allowsJSON5 = false
        do {
            return try decoder.decode(type, from: data)
        } catch let error as DecodingError {
            throw AppStoreJSONError(.foundation, offset: 0, String(describing: error))
        }
    }
}
