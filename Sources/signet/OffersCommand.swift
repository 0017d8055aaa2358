import AppStoreModels
import ArgumentParser
import Foundation
import SignetAppStoreAPI
import SignetOpenSSL

/// `signet offers sign ...`: the signatures an app asks its server for before StoreKit shows an
/// offer, made with the In-App Purchase key (docs/offers.md). For trying a key and an offer by
/// hand; a backend signs through the library (`OfferSigner`) or the entitlement API.
struct OffersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "offers",
        abstract: "Signs offers for StoreKit with the In-App Purchase key (docs/offers.md).",
        subcommands: [SignOfferCommand.self])
}

struct SignOfferCommand: ParsableCommand {
    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case promotional, promotionalV1 = "promotional-v1", introductory, advancedCommerce = "advanced-commerce"
    }

    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Prints a promotional offer (V2 or V1), introductory offer eligibility or Advanced Commerce signature.",
        discussion: """
            promotional: a promotional offer signature V2 (a JWS) for StoreKit's Product.PurchaseOption.promotionalOffer(_:compactJWS:). Needs --product and --offer; --transaction (any transaction id of the customer's; their appTransactionId works) is recommended.

            promotional-v1: the legacy signature, printed as {"keyIdentifier","nonce","timestamp","signature"}. Needs --product and --offer; --app-account-token (the one the purchase will carry) and --nonce are optional.

            introductory: introductory offer eligibility (a JWS). Needs --product, --transaction, and --allow or --deny.

            advanced-commerce: an Advanced Commerce API in-app request. Needs --request FILE (the request's JSON; - reads stdin); prints {"signatureInfo":{"token":…}} for Product.PurchaseOption.custom(key: "advancedCommerceData", value:).

            The key comes from the variables `signet backfill` uses (SIGNET_APPSTORE_KEY_ID, SIGNET_APPSTORE_ISSUER_ID, SIGNET_APPSTORE_PRIVATE_KEY, SIGNET_BUNDLE_ID). Each signature is good for one purchase attempt, V1's for 24 hours. --decode also prints a JWS's header and claims on stderr. Apple's rules: docs/offers.md.

            Exit status: 0 signed, 2 a missing or invalid input or key.

            Example:
              signet offers sign promotional --product com.example.monthly \\
                --offer winback.50 --transaction 2000000123456789
            """)

    @Argument(help: "What to sign: \(Kind.allCases.map(\.rawValue).joined(separator: ", ")).")
    var kind: Kind

    @Option(name: .long, help: "The product id.")
    var product: String?

    @Option(name: .long, help: "The offer identifier (App Store Connect).")
    var offer: String?

    @Option(name: .long, help: "A transaction id of the customer's (promotional: optional; introductory: required).")
    var transaction: String?

    @Option(name: .long, help: "promotional-v1: the appAccountToken the purchase will carry (a UUID, any case).")
    var appAccountToken: String?

    @Option(name: .long, help: "promotional-v1: the nonce to sign (a UUID); a fresh one by default.")
    var nonce: String?

    @Flag(name: .long, help: "introductory: let the customer have the introductory offer.")
    var allow = false

    @Flag(name: .long, help: "introductory: withhold the introductory offer.")
    var deny = false

    @Option(name: .long, help: "advanced-commerce: the request JSON file (- for stdin).")
    var request: String?

    @Flag(name: .long, help: "Also print a JWS's decoded header and claims on stderr.")
    var decode = false

    func validate() throws {
        func need(_ value: String?, _ flag: String) throws {
            guard value != nil else { throw ValidationError("\(kind.rawValue) needs \(flag)") }
        }
        switch kind {
        case .promotional, .promotionalV1:
            try need(product, "--product")
            try need(offer, "--offer")
        case .introductory:
            try need(product, "--product")
            try need(transaction, "--transaction")
            guard allow != deny else { throw ValidationError("introductory needs exactly one of --allow and --deny") }
        case .advancedCommerce:
            try need(request, "--request")
        }
        if let appAccountToken, AppAccountToken(appAccountToken) == nil {
            throw ValidationError("--app-account-token '\(appAccountToken)' is not a UUID")
        }
        if let nonce, UUID(uuidString: nonce) == nil { throw ValidationError("--nonce '\(nonce)' is not a UUID") }
    }

    func run() throws {
        let credentials: AppStoreAPICredentials
        do {
            credentials = try AppStoreAPIConfiguration.fromEnvironment(Terminal.environment).credentials
        } catch {
            throw ConfigurationFailure(description: "signet offers sign: \(error.message) (see `signet help backfill`)")
        }
        let signer = OfferSigner(credentials: credentials)
        let output: String
        do {
            switch kind {
            case .promotional:
                output = try signer.promotionalOfferV2(productId: product ?? "", offerIdentifier: offer ?? "", transactionId: transaction)
            case .introductory:
                output = try signer.introductoryOfferEligibility(
                    productId: product ?? "", allowIntroductoryOffer: allow, transactionId: transaction ?? "")
            case .advancedCommerce:
                output = String(decoding: try signer.advancedCommerceData(requestJSON: try readRequest()), as: UTF8.self)
            case .promotionalV1:
                let signature = try signer.promotionalOfferV1(
                    productId: product ?? "", offerIdentifier: offer ?? "", appAccountToken: appAccountToken.flatMap { AppAccountToken($0) },
                    nonce: nonce.flatMap { UUID(uuidString: $0) })
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                output = String(decoding: try encoder.encode(signature), as: UTF8.self)
            }
        } catch let error as OfferSignatureError {
            throw ConfigurationFailure(description: "signet offers sign: \(error)")
        }
        try Terminal.printLine(Array(output.utf8))
        if decode, kind != .promotionalV1 { explain(output) }
    }

    private func readRequest() throws -> [UInt8] {
        guard let request else { return [] }
        if request == "-" { return Array(FileHandle.standardInput.readDataToEndOfFile()) }
        guard let data = FileManager.default.contents(atPath: request) else {
            throw ConfigurationFailure(description: "signet offers sign: cannot read the request file \(request)")
        }
        return Array(data)
    }

    /// The JWS's header and claims, decoded, on stderr (the signature stays as is).
    private func explain(_ output: String) {
        var token = output
        if kind == .advancedCommerce, let data = output.data(using: .utf8),
            let wrapper = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let info = wrapper["signatureInfo"] as? [String: Any], let inner = info["token"] as? String
        {
            token = inner
        }
        for (name, segment) in zip(["header", "claims"], token.split(separator: ".").prefix(2)) {
            let text = (try? Base64.decodeURL(segment.utf8)).map { String(decoding: $0, as: UTF8.self) } ?? "(not base64url)"
            Terminal.note("\(name): \(text)")
        }
    }
}
