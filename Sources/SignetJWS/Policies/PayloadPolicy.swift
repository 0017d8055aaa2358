import AppStoreModels
import SignetCore

/// Step 3 (``VerificationStep/payload``): the authenticated payload is a JSON object
/// (`malformed_jws`) that decodes to Apple's model for its kind (`malformed_payload` when a
/// field has the wrong type or range).
struct PayloadPolicy<Payload: Decodable>: JWSVerificationPolicy {
    static var step: VerificationStep { .payload }

    func check(_ json: [UInt8], role: JWSRole) throws(RecordRejection) -> Payload {
        // A JSON object must start with '{' (after optional whitespace).
        let first = json.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
        guard first == UInt8(ascii: "{") else {
            throw RecordRejection(.malformedJWS, "\(role.field): the payload is not a JSON object")
        }
        do {
            return try AppStoreJSON.decode(Payload.self, from: json)
        } catch let error as AppStoreJSONError {
            switch error.kind {
            case .typeMismatch, .numberOutOfRange:
                throw RecordRejection(.malformedPayload, "\(role.field): the payload does not match the \(Payload.self) model: \(error)")
            default:
                throw RecordRejection(.malformedJWS, "\(role.field): the payload is not valid JSON: \(error)")
            }
        } catch {
            throw RecordRejection(.malformedPayload, "\(role.field): the payload does not decode as \(Payload.self): \(error)")
        }
    }
}
