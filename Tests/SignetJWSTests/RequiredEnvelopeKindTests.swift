import SignetCore
import SignetJWS
import Testing

/// A source that takes one kind of signed object only (the webhook's purchase path) says so
/// on the record, and `decode` turns away any other kind before it can be verified and
/// applied as what it is.
@Suite("decode and the kind a source requires")
struct RequiredEnvelopeKindTests {
    static func record(_ line: String, requiring kind: SignedEnvelope.Kind?) -> Record {
        var record = Record(raw: Array(line.utf8), position: SourcePosition(stream: "test", offset: 1))
        record[RequiredEnvelopeKindPart.self] = kind
        return record
    }

    @Test("the required kind passes; another kind is missing_signed_payload and gets no envelope")
    func requiredKind() throws {
        var transaction = Self.record(#"{"signedTransaction":"a.b.c"}"#, requiring: .transaction)
        try DecodeStage().process(record: &transaction)
        #expect(transaction[SignedEnvelopePart.self] == SignedEnvelope(kind: .transaction, jws: "a.b.c"))

        for line in [#"{"signedPayload":"a.b.c"}"#, "a.b.c", #"{"signedRenewalInfo":"a.b.c"}"#] {
            var notification = Self.record(line, requiring: .transaction)
            let rejection = #expect(throws: RecordRejection.self) { try DecodeStage().process(record: &notification) }
            #expect(rejection?.reason == .missingSignedPayload)
            #expect(rejection?.detail.contains(#"{"signedTransaction": "<JWS>"}"#) == true, "\(rejection?.detail ?? "")")
            #expect(notification[SignedEnvelopePart.self] == nil)
        }
    }

    @Test("without a required kind every kind passes")
    func anyKind() throws {
        var notification = Self.record(#"{"signedPayload":"a.b.c"}"#, requiring: nil)
        try DecodeStage().process(record: &notification)
        #expect(notification[SignedEnvelopePart.self]?.kind == .notification)
    }
}
