import CoreMetrics
import Foundation
import SignetCore
import SignetOpenSSL

/// Step 1 (``VerificationStep/compactJWS``): size limit, exactly three strict base64url
/// segments (`malformed_jws`), then the header rules of ``ParsedJWSHeader`` (`alg`, `crit`,
/// `x5c`). Parsed headers are cached by their exact segment text.
struct CompactJWSPolicy: JWSVerificationPolicy {
    static let step = VerificationStep.compactJWS

    let headerCache: BoundedCache<PrehashedBytes, ParsedJWSHeader>
    let metrics: VerifierCacheMetrics

    func check(_ raw: UnsafeRawBufferPointer, role: JWSRole) throws(RecordRejection) -> CompactJWS {
        guard !raw.isEmpty, let base = raw.baseAddress else { throw RecordRejection(.malformedJWS, "\(role.field) is empty") }
        guard raw.count <= AppStoreVerifier.maximumJWSBytes else {
            throw RecordRejection(
                .malformedJWS, "\(role.field) is \(raw.count) bytes, more than the \(AppStoreVerifier.maximumJWSBytes)-byte limit")
        }
        // memchr finds the dots at memory bandwidth (a byte loop was 5 % of the hot path).
        // Offsets go to two locals, not an array: no allocation per record.
        var dots = (0, 0)
        var found = 0
        var cursor = 0
        while cursor < raw.count, found < 3,
              let hit = memchr(base + cursor, Int32(UInt8(ascii: ".")), raw.count - cursor)
        {
            let offset = base.distance(to: UnsafeRawPointer(hit))
            if found == 0 { dots.0 = offset } else if found == 1 { dots.1 = offset }
            found += 1
            cursor = offset + 1
        }
        guard found == 2 else {
            let count = found == 3 ? "more than 3" : "\(found + 1)"
            throw RecordRejection(
                .malformedJWS, "\(role.field) has \(count) dot-separated segments; a compact JWS has exactly 3 (header.payload.signature)")
        }
        let header = try parsedHeader(UnsafeRawBufferPointer(rebasing: raw[0..<dots.0]), role: role)
        let payloadJSON: [UInt8]
        do {
            payloadJSON = try Base64.decodeURL(UnsafeRawBufferPointer(rebasing: raw[(dots.0 + 1)..<dots.1]))
        } catch {
            throw RecordRejection(.malformedJWS, "\(role.field): the payload segment is not strict base64url (\(error))")
        }
        let signature: [UInt8]
        do {
            signature = try Base64.decodeURL(UnsafeRawBufferPointer(rebasing: raw[(dots.1 + 1)...]))
        } catch {
            throw RecordRejection(.malformedJWS, "\(role.field): the signature segment is not strict base64url (\(error))")
        }
        return CompactJWS(
            header: header, payloadJSON: payloadJSON, signature: signature,
            signingInput: UnsafeRawBufferPointer(rebasing: raw[0..<dots.1]))
    }

    private func parsedHeader(_ segment: UnsafeRawBufferPointer, role: JWSRole) throws(RecordRejection) -> ParsedJWSHeader {
        guard headerCache.capacity > 0 else { return try ParsedJWSHeader.parse(segment: segment, role: role) }
        // The last header first, compared in place: no key to copy and hash.
        if let recent = headerCache.recent, recent.key.equals(segment) {
            metrics.headerHits.increment()
            return recent.value
        }
        let key = PrehashedBytes(segment)
        if let cached = headerCache.value(for: key) {
            metrics.headerHits.increment()
            return cached
        }
        metrics.headerMisses.increment()
        let parsed = try ParsedJWSHeader.parse(segment: segment, role: role)
        headerCache.insert(parsed, for: key)
        return parsed
    }
}
