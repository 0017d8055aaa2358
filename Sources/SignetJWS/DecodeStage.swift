import AppStoreModels
import Foundation
public import SignetCore

/// The `decode` stage: finds the signed object in an input line.
///
/// Accepted lines (see Schemas/input-line.schema.json):
/// - `{"signedPayload": "<JWS>"}` — the body Apple POSTs for a notification;
/// - `{"signedTransaction": "<JWS>"}` or `{"signedTransactionInfo": "<JWS>"}` — a transaction
///   an app forwards right after a purchase;
/// - `{"signedRenewalInfo": "<JWS>"}`;
/// - `{"signedTransactionInfo": "<JWS>", "signedRenewalInfo": "<JWS>", "status": N}` — Apple's
///   current status of a purchase, an item of Get All Subscription Statuses' `lastTransactions`
///   as Apple sends it (`signet reconcile`); `status` is optional;
/// - a bare compact JWS — treated as a notification.
///
/// Nothing is trusted here; `verify` decides. Rejects: `invalid_utf8`, `malformed_json`,
/// `missing_signed_payload` (also for another kind than the source requires,
/// `RequiredEnvelopeKindPart`).
public struct DecodeStage: RecordStage {
    public let name = "decode"
    public let parallelism: Int

    /// What the `decode` stage's keys set (`ComponentSpec/decodeStage`).
    public struct Options: Sendable, Hashable {
        /// Threads decoding lines.
        public var workers = 1

        /// One worker.
        public init() {}
    }

    /// A stage decoding on `parallelism` threads.
    public init(parallelism: Int = Options().workers) {
        self.parallelism = parallelism
    }

    /// A stage decoding as `options` say.
    public init(options: Options) {
        self.init(parallelism: options.workers)
    }

    /// Finds the signed object in the record's line (``SignedEnvelopePart``) or rejects the
    /// line: not JSON, no signed field, not a compact JWS.
    public func process(record: inout Record) throws(RecordRejection) {
        let envelope = try Self.envelope(from: record.raw)
        if let required = record[RequiredEnvelopeKindPart.self], envelope.kind != required {
            let hint = Self.signedFields.first { $0.1 == required }.map { #": post {"\#($0.0)": "<JWS>"}"# } ?? ""
            throw RecordRejection(.missingSignedPayload, "a \(envelope.kind.rawValue) where only a \(required.rawValue) is taken\(hint)")
        }
        record[SignedEnvelopePart.self] = envelope
    }

    /// Parses one input line into its signed envelope.
    public static func envelope(from line: [UInt8]) throws(RecordRejection) -> SignedEnvelope {
        // The common shape first: it is pure ASCII, so it needs no UTF-8 validation.
        if let fast = fastEnvelope(line[...]) { return fast }
        guard String(validating: line, as: UTF8.self) != nil else {
            throw RecordRejection(.invalidUTF8, "the line is not valid UTF-8")
        }
        let trimmed = line.trimmingJSONWhitespace()
        guard let first = trimmed.first else {
            throw RecordRejection(.malformedJSON, "the line is empty")
        }
        let isObject = first == UInt8(ascii: "{")
        if !isObject, isCompactJWS(trimmed), trimmed.count(where: { $0 == UInt8(ascii: ".") }) == 2 {
            return SignedEnvelope(kind: .notification, jws: String(decoding: trimmed, as: UTF8.self))
        }
        if isObject, let fast = fastEnvelope(trimmed) { return fast }
        // Signet's strict reader, not Foundation: exactly RFC 8259, duplicate names rejected, so
        // the envelope means the same to Signet as to any conforming JSON parser. A line that is
        // not an object is parsed too, so the detail says why (a byte-order mark, UTF-16, ...).
        let body: JSONElement
        do {
            body = try JSONElement.parse(trimmed, duplicateKeys: .reject)
        } catch {
            let what = isObject ? "the line is not valid JSON" : "the line is neither a JSON object nor a compact JWS"
            throw RecordRejection(.malformedJSON, "\(what): \(error)")
        }
        guard body.isObject else {
            throw RecordRejection(.malformedJSON, "the line is JSON but not an object; expected an object or a compact JWS")
        }
        var candidates: [(String?, SignedEnvelope.Kind, String)] = []
        for (field, kind) in Self.signedFields {
            switch body[field] {
            case nil, .null?: candidates.append((nil, kind, field))
            case .string(let text)?: candidates.append((text, kind, field))
            case .some: throw RecordRejection(.malformedJSON, "\"\(field)\" is not a string")
            }
        }
        let present = candidates.filter { $0.0 != nil }
        guard let chosen = present.first, let jws = chosen.0 else {
            throw RecordRejection(
                .missingSignedPayload,
                "the object has none of signedPayload, signedTransaction, signedTransactionInfo, signedRenewalInfo")
        }
        if present.count == 2, present[0].2 == "signedTransactionInfo", present[1].2 == "signedRenewalInfo",
            let transaction = present[0].0, let renewalInfo = present[1].0
        {
            return SignedEnvelope(kind: .status, jws: transaction, renewalJWS: renewalInfo, status: try Self.status(in: body))
        }
        guard present.count == 1 else {
            throw RecordRejection(
                .malformedJSON, "the object carries more than one signed field (\(present.map(\.2).joined(separator: ", ")))")
        }
        return SignedEnvelope(kind: chosen.1, jws: jws)
    }

    /// A status line's `status`: absent or null, or a small integer (Apple's 1 to 5, and
    /// whatever Apple adds); anything else is malformed.
    private static func status(in body: JSONElement) throws(RecordRejection) -> Int? {
        switch body["status"] {
        case nil, .null?: return nil
        case .number(let text)?:
            guard let value = Int(text), (0...1000).contains(value) else {
                throw RecordRejection(.malformedJSON, "\"status\" is not a status number (\(text.prefix(40)))")
            }
            return value
        case .some: throw RecordRejection(.malformedJSON, "\"status\" is not a number")
        }
    }

    /// `{"signedPayload":"..."}` exactly, the shape of nearly every line: no JSON parser needed,
    /// because a compact JWS contains no character JSON would escape.
    private static func fastEnvelope(_ line: ArraySlice<UInt8>) -> SignedEnvelope? {
        let prefix = Array(#"{"signedPayload":""#.utf8)
        let suffix = Array(#""}"#.utf8)
        guard line.count > prefix.count + suffix.count, line.starts(with: prefix), line.suffix(2).elementsEqual(suffix)
        else { return nil }
        let body = line.dropFirst(prefix.count).dropLast(suffix.count)
        guard isCompactJWS(body) else { return nil }
        return SignedEnvelope(kind: .notification, jws: String(decoding: body, as: UTF8.self))
    }

    /// Whether every byte is base64url or '.', the alphabet of a compact JWS.
    ///
    /// Written as branch-free range comparisons so the compiler vectorises it: this runs
    /// over every 10 KB input line.
    private static func isCompactJWS(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.withUnsafeBufferPointer { buffer in
            // Integer flags instead of `&&`/`||`, which would branch per byte: ~1 µs instead of ~14 µs for 12 KB.
            var bad: UInt8 = 0
            for byte in buffer {
                let upper: UInt8 = byte &- UInt8(ascii: "A") < 26 ? 1 : 0
                let lower: UInt8 = byte &- UInt8(ascii: "a") < 26 ? 1 : 0
                let digit: UInt8 = byte &- UInt8(ascii: "0") < 10 ? 1 : 0
                let symbol: UInt8 =
                    (byte == UInt8(ascii: "-") ? 1 : 0) | (byte == UInt8(ascii: "_") ? 1 : 0) | (byte == UInt8(ascii: ".") ? 1 : 0)
                bad |= (upper | lower | digit | symbol) ^ 1
            }
            return bad == 0
        }
    }

    /// The members that may carry the signed object, and what each one holds.
    private static let signedFields: [(String, SignedEnvelope.Kind)] = [
        ("signedPayload", .notification),
        ("signedTransaction", .transaction),
        ("signedTransactionInfo", .transaction),
        ("signedRenewalInfo", .renewalInfo),
    ]
}

extension Array where Element == UInt8 {
    func trimmingJSONWhitespace() -> ArraySlice<UInt8> {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        guard let start = firstIndex(where: { !isSpace($0) }), let end = lastIndex(where: { !isSpace($0) }) else {
            return []
        }
        return self[start...end]
    }
}
