import HTTPTypes
import Hummingbird
import NIOCore
import SignetAppStorePipeline

/// `POST /v1/offers/signature`: offer signatures for the app's backend, signed only when
/// Signet's state says the customer may have the offer (``OfferSignatureService``).
extension EntitlementAPI {
    /// The largest request body read (a request is a few hundred bytes).
    static let maxOfferRequestBytes = 16 << 10

    /// The service's answer to one body (blocking: store reads).
    func offerSignature(_ body: [UInt8]) -> Response {
        let (status, json) = offers.respond(to: body)
        return Response(
            status: .init(code: status), headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: json)))
    }
}
