import COpenSSL

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Small internal helpers shared by the wrappers (BIO and ASN1 plumbing).
enum OpenSSLSupport {
    /// Runs `body` with a read-only memory BIO over `bytes`; the BIO is freed afterwards.
    static func withReadBIO<R>(_ bytes: [UInt8], _ body: (OpaquePointer) -> R) throws(OpenSSLError) -> R {
        let result: R? = bytes.withUnsafeBytes { raw in
            // BIO_new_mem_buf does not copy; `raw` outlives the BIO.
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(clamping: raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return body(bio)
        }
        guard let result else { throw OpenSSLError.drain("create memory BIO") }
        return result
    }

    /// Runs a `d2i_*` decoder over `bytes`: the decoded object (owned by the caller, nil when
    /// the input does not parse) and how many bytes it took, so callers can refuse trailing bytes.
    static func decodeDER(
        _ bytes: [UInt8], _ d2i: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> OpaquePointer?
    ) -> (object: OpaquePointer?, consumed: Int) {
        bytes.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let object = d2i(&cursor, buffer.count)
            guard let cursor, let base = buffer.baseAddress else { return (object, 0) }
            return (object, base.distance(to: cursor))
        }
    }

    /// Decodes `bytes` as exactly one DER object: the object (the caller frees it), or why
    /// not (empty, does not parse, trailing bytes; the object already freed).
    static func decodeWholeDER(
        _ bytes: [UInt8], _ d2i: (UnsafeMutablePointer<UnsafePointer<UInt8>?>, Int) -> OpaquePointer?, free: (OpaquePointer) -> Void
    ) -> Result<OpaquePointer, MalformedDER> {
        guard !bytes.isEmpty else { return .failure(MalformedDER(detail: "empty body")) }
        let (parsed, consumed) = decodeDER(bytes, d2i)
        guard let object = parsed else { return .failure(MalformedDER(detail: OpenSSLError.drain("parse DER").description)) }
        guard consumed == bytes.count else {
            free(object)
            return .failure(MalformedDER(detail: "\(bytes.count - consumed) trailing bytes"))
        }
        return .success(object)
    }

    /// Why ``decodeWholeDER(_:_:free:)`` refused its input.
    struct MalformedDER: Error {
        var detail: String
    }

    /// What is wrong with a signed statement's thisUpdate/nextUpdate at `now` (OCSP responses
    /// and CRLs share the rule), nil when nothing is: thisUpdate after now + leeway or
    /// nextUpdate before thisUpdate is not yet valid; nextUpdate before now - leeway is stale.
    /// Overflow-safe: the times come from the network and may be anything ASN1_TIME holds.
    static func validityProblem(thisUpdate: Int64, nextUpdate: Int64?, now: Int64, leeway: Int64) -> ValidityProblem? {
        let (latestThisUpdate, overflowUp) = now.addingReportingOverflow(leeway)
        guard overflowUp || thisUpdate <= latestThisUpdate else { return .notYetValid }
        guard let nextUpdate else { return nil }
        guard nextUpdate >= thisUpdate else { return .notYetValid }
        let (earliestNextUpdate, overflowDown) = now.subtractingReportingOverflow(leeway)
        guard overflowDown || nextUpdate >= earliestNextUpdate else { return .stale }
        return nil
    }

    enum ValidityProblem {
        case notYetValid
        case stale
    }

    /// Runs `write` against a fresh memory BIO and returns what it wrote.
    static func collectBIO(_ operation: String, _ write: (OpaquePointer) -> Int32) throws(OpenSSLError) -> [UInt8] {
        guard let bio = BIO_new(BIO_s_mem()) else { throw OpenSSLError.drain("create memory BIO") }
        defer { BIO_free(bio) }
        guard write(bio) > 0 else { throw OpenSSLError.drain(operation) }
        var pointer: UnsafeMutablePointer<CChar>?
        // BIO_get_mem_data(bio, &pointer) is a macro for this ctrl call.
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard length >= 0, let pointer else { return [] }
        return pointer.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// Seconds since 1970 of an ASN1_TIME (UTCTime or GeneralizedTime), or nil if malformed.
    static func epochSeconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        guard let time else { return nil }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else {
            OpenSSLError.drainErrorQueue()
            return nil
        }
        return civilToEpoch(
            year: Int64(parts.tm_year) + 1900, month: Int64(parts.tm_mon) + 1, day: Int64(parts.tm_mday),
            hour: Int64(parts.tm_hour), minute: Int64(parts.tm_min), second: Int64(parts.tm_sec))
    }

    /// Proleptic Gregorian calendar date (UTC) to seconds since 1970, without `timegm`
    /// (whose behaviour for out-of-range years differs between libcs).
    static func civilToEpoch(year: Int64, month: Int64, day: Int64, hour: Int64, minute: Int64, second: Int64) -> Int64 {
        // Howard Hinnant's days_from_civil.
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        return days * 86_400 + hour * 3_600 + minute * 60 + second
    }

    /// Parses a dotted OID ("1.2.840.113635.100.6.11.1") into an owned ASN1_OBJECT.
    static func object(forOID oid: String) throws(OpenSSLError) -> OpaquePointer {
        // no_name = 1: only numerical form is accepted, so "CN" cannot alias an OID.
        guard let object = OBJ_txt2obj(oid, 1) else { throw OpenSSLError.drain("parse OID \(oid)") }
        return object
    }
}
