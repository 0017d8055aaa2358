import AppStoreModels
public import Foundation
public import SignetCore
public import SignetOpenSSL

/// Verifies App Store signed data — notifications (`signedPayload`), transactions and
/// renewal info — the way Apple's App Store Server Library does, and stricter.
///
/// Every compact JWS goes through the policies of ``VerificationStep`` in that order; the
/// first failure decides the reason code (docs/verification.md states the same order):
/// 1. `CompactJWSPolicy`: size, three strict base64url segments, `alg` exactly `ES256`,
///    no `crit`, `x5c` of three DER certificates (`x5c[2]` must parse but is never trusted).
/// 2. `SignaturePolicy`: ES256 with `x5c[0]`'s key, before the payload is parsed.
/// 3. `PayloadPolicy`: the payload decodes to Apple's model for its kind.
/// 4. `ValidationInstantPolicy`: `signedDate` not in the future; the chain's instant.
/// 5. `AppleChainPolicy`: chain to a configured root at that instant, Apple's OIDs.
/// 6. `ClaimsPolicy`: configured bundle id, app Apple id, environment.
/// 7. A notification's nested JWS pass steps 1–6 on their own (`nested_jws_invalid`).
///
/// Caching: a bounded cache maps each exact header segment to its parsed `x5c`, and a
/// bounded chain cache maps each exact `(x5c[0], x5c[1])` DER pair that verified to the
/// chain's combined validity window. A steady stream therefore costs one ECDSA
/// verification per JWS and no X.509 work. A date outside a cached window falls back to
/// a full OpenSSL verification, so caches never change a verdict.
///
/// Thread safety: immutable apart from the two caches, which are `Mutex`-protected.
/// Share one instance across threads.
public final class AppStoreVerifier: Sendable {
    /// Apple's marker on App Store receipt-signing leaves.
    package static let receiptSigningLeafOID = "1.2.840.113635.100.6.11.1"
    /// Apple's marker on the WWDR intermediate CA.
    package static let wwdrIntermediateOID = "1.2.840.113635.100.6.2.1"
    /// Inputs longer than this are refused before any work (real notifications are ~10–20 KB).
    public static let maximumJWSBytes = 1 << 20
    /// The order of the checks: the first failing step decides the reason code.
    public static let verificationOrder: [VerificationStep] = VerificationStep.allCases

    /// The configuration this verifier was built with.
    public let configuration: VerifierConfiguration
    private let headerCache: BoundedCache<PrehashedBytes, ParsedJWSHeader>
    private let chainCache: BoundedCache<CertificatePairKey, VerifiedChainEntry>

    // The policies, one stored concrete value each (static dispatch, no per-record allocation).
    private let compactJWS: CompactJWSPolicy
    private let signature = SignaturePolicy()
    private let validationInstant: ValidationInstantPolicy
    private let appleChain: AppleChainPolicy
    private let notificationClaims: ClaimsPolicy<ResponseBodyV2DecodedPayload>
    private let transactionClaims: ClaimsPolicy<JWSTransactionDecodedPayload>
    private let renewalInfoClaims: ClaimsPolicy<JWSRenewalInfoDecodedPayload>
    private let appTransactionClaims: ClaimsPolicy<JWSAppTransactionDecodedPayload>
    private let realtimeRequestClaims: ClaimsPolicy<DecodedRealtimeRequestBody>

    /// Validates `configuration` and builds the trust store.
    ///
    /// Throws when the configuration is unsafe or cannot work:
    /// - `roots` is empty;
    /// - `environment` is Xcode or LocalTesting while the roots include Apple Root CA - G3.
    ///   Apple's library skips all signature checks in those environments; Signet never
    ///   does, and no data signed in them chains to Apple's root, so such a verifier could
    ///   only reject everything — or, worse, be mistaken for one that accepts unsigned
    ///   data. With a private test root (no Apple G3) they are allowed and fully checked;
    /// - `environment` is Production without `appAppleId` (as Apple's library);
    /// - a negative skew or cache capacity.
    public init(configuration: VerifierConfiguration) throws(VerifierConfigurationError) {
        guard !configuration.roots.isEmpty else {
            throw VerifierConfigurationError(
                .noRoots, "no trust anchors configured: nothing could ever verify (use AppleRoots.appleRootCAG3 for App Store data)")
        }
        if let environment = configuration.environments.first(where: { $0 == .xcode || $0 == .localTesting }),
           configuration.roots.contains(where: AppleRoots.isAppleRootCAG3)
        {
            throw VerifierConfigurationError(
                .unsignedEnvironment,
                "environment \(environment.rawValue) is signed locally (by Xcode or a test key), never by Apple Root CA - G3. "
                    + "Apple's library skips signature checks there; Signet always verifies, so this verifier would reject everything. "
                    + "Use Sandbox/Production with Apple's root, or a private test root for \(environment.rawValue) data.")
        }
        if configuration.environments.contains(.production) && configuration.appAppleId == nil {
            throw VerifierConfigurationError(
                .missingAppAppleId, "environment Production requires appAppleId (the App Store app id), as in Apple's library")
        }
        guard configuration.maxFutureSkew >= .zero else {
            throw VerifierConfigurationError(.invalidSetting, "maxFutureSkew must not be negative (\(configuration.maxFutureSkew))")
        }
        guard configuration.chainCacheCapacity >= 0, configuration.headerCacheCapacity >= 0 else {
            throw VerifierConfigurationError(.invalidSetting, "cache capacities must not be negative")
        }
        let store: TrustStore
        do {
            store = try TrustStore(roots: configuration.roots)
        } catch {
            throw VerifierConfigurationError(.trustStore, "cannot build the trust store: \(error)")
        }
        let metrics = VerifierCacheMetrics()
        self.configuration = configuration
        self.headerCache = BoundedCache(capacity: configuration.headerCacheCapacity)
        self.chainCache = BoundedCache(capacity: configuration.chainCacheCapacity)
        self.compactJWS = CompactJWSPolicy(headerCache: headerCache, metrics: metrics)
        self.validationInstant = ValidationInstantPolicy(configuration: configuration)
        self.appleChain = AppleChainPolicy(
            chainVerifier: CertificateChainVerifier(trustStore: store), chainCache: chainCache, metrics: metrics,
            roots: configuration.roots, keyTableThreshold: configuration.keyTableThreshold)
        self.notificationClaims = ClaimsPolicy(configuration: configuration)
        self.transactionClaims = ClaimsPolicy(configuration: configuration)
        self.renewalInfoClaims = ClaimsPolicy(configuration: configuration)
        self.appTransactionClaims = ClaimsPolicy(configuration: configuration)
        self.realtimeRequestClaims = ClaimsPolicy(configuration: configuration)
    }

    // MARK: - Public entry points

    /// Verifies a notification's `signedPayload` and its nested JWS.
    public func verifyNotification(_ jws: String) throws(RecordRejection) -> VerifiedNotification {
        var jws = jws
        return try jws.withUTF8 { verifyNotificationResult(UnsafeRawBufferPointer($0)) }.get()
    }

    /// Verifies a notification's `signedPayload` given as a substring (e.g. a slice of a line).
    public func verifyNotification(_ jws: Substring) throws(RecordRejection) -> VerifiedNotification {
        var jws = jws
        return try jws.withUTF8 { verifyNotificationResult(UnsafeRawBufferPointer($0)) }.get()
    }

    /// Verifies a notification's `signedPayload` given as UTF-8 bytes.
    public func verifyNotification(_ jws: some Collection<UInt8>) throws(RecordRejection) -> VerifiedNotification {
        try withBytes(jws) { verifyNotificationResult($0) }.get()
    }

    /// Verifies an `appData.signedAppTransactionInfo` (an app transaction; claims as a
    /// notification's: bundle id, app Apple id in Production, environment from `receiptType`).
    public func verifyAppTransaction(_ jws: String) throws(RecordRejection) -> VerifiedAppTransaction {
        var jws = jws
        return try jws.withUTF8 { raw in Result { () throws(RecordRejection) in try appTransaction(UnsafeRawBufferPointer(raw)) } }.get()
    }

    /// Verifies a real-time retention request's `signedPayload` (the body the App Store POSTs to
    /// the Get Retention Message endpoint is `{"signedPayload": …}`): steps 1–6 as a
    /// notification, then every field Apple documents must be present (`malformed_payload`
    /// names the missing ones). It carries no bundle id: a configured `appAppleId` is compared
    /// in every environment, not only in Production, since Apple says never to answer another
    /// app's request and nothing else in it names the app.
    public func verifyRealtimeRequest(_ jws: String) throws(RecordRejection) -> VerifiedRealtimeRequest {
        var jws = jws
        return try jws.withUTF8 { raw in Result { () throws(RecordRejection) in try realtimeRequest(UnsafeRawBufferPointer(raw)) } }.get()
    }

    /// Verifies a `signedTransactionInfo` (from a notification, the App Store Server API or a device).
    public func verifyTransaction(_ jws: String) throws(RecordRejection) -> VerifiedTransaction {
        var jws = jws
        return try jws.withUTF8 { raw in Result { () throws(RecordRejection) in try transaction(UnsafeRawBufferPointer(raw)) } }.get()
    }

    /// Verifies a `signedTransactionInfo` given as a substring.
    public func verifyTransaction(_ jws: Substring) throws(RecordRejection) -> VerifiedTransaction {
        var jws = jws
        return try jws.withUTF8 { raw in Result { () throws(RecordRejection) in try transaction(UnsafeRawBufferPointer(raw)) } }.get()
    }

    /// Verifies a `signedTransactionInfo` given as UTF-8 bytes.
    public func verifyTransaction(_ jws: some Collection<UInt8>) throws(RecordRejection) -> VerifiedTransaction {
        try withBytes(jws) { raw in Result { () throws(RecordRejection) in try transaction(raw) } }.get()
    }

    /// Verifies a `signedRenewalInfo`.
    public func verifyRenewalInfo(_ jws: String) throws(RecordRejection) -> VerifiedRenewalInfo {
        var jws = jws
        return try jws.withUTF8 { raw in Result { () throws(RecordRejection) in try renewalInfo(UnsafeRawBufferPointer(raw)) } }.get()
    }

    /// Verifies a `signedRenewalInfo` given as a substring.
    public func verifyRenewalInfo(_ jws: Substring) throws(RecordRejection) -> VerifiedRenewalInfo {
        var jws = jws
        return try jws.withUTF8 { raw in Result { () throws(RecordRejection) in try renewalInfo(UnsafeRawBufferPointer(raw)) } }.get()
    }

    /// Verifies a `signedRenewalInfo` given as UTF-8 bytes.
    public func verifyRenewalInfo(_ jws: some Collection<UInt8>) throws(RecordRejection) -> VerifiedRenewalInfo {
        try withBytes(jws) { raw in Result { () throws(RecordRejection) in try renewalInfo(raw) } }.get()
    }

    /// Verifies Apple's status of a purchase (an item of Get All Subscription Statuses'
    /// `lastTransactions`): the transaction and the renewal info each as on their own, then
    /// that both are of the same purchase. `status` is carried along unverified.
    public func verifyStatus(transaction: String, renewalInfo: String, status: Int?) throws(RecordRejection) -> VerifiedSubscriptionStatus {
        let verifiedTransaction = try verifyTransaction(transaction)
        let verifiedRenewalInfo = try verifyRenewalInfo(renewalInfo)
        let purchase = verifiedTransaction.payload.originalTransactionId
        guard let purchase, purchase == verifiedRenewalInfo.payload.originalTransactionId else {
            throw RecordRejection(
                .malformedPayload,
                "signedRenewalInfo is of purchase \(verifiedRenewalInfo.payload.originalTransactionId ?? "<none>"), signedTransactionInfo of \(purchase ?? "<none>"): a status pairs one purchase's two")
        }
        return VerifiedSubscriptionStatus(transaction: verifiedTransaction, renewalInfo: verifiedRenewalInfo, status: status)
    }

    /// Applies Signet's chain policy (step 5, `AppleChainPolicy`) to a leaf and
    /// intermediate at `date`, without a JWS: OpenSSL path validation to a configured root,
    /// chain length 3, Apple's marker OIDs, a CA intermediate, and a leaf allowed to sign.
    /// For tooling and chain tests.
    public func checkCertificateChain(leaf: X509Certificate, intermediate: X509Certificate, at date: Date) throws(RecordRejection) {
        let header = ParsedJWSHeader(leaf: leaf, intermediate: intermediate, claimedRoot: intermediate)
        let instant = ValidationInstant(milliseconds: AppleTimestamp(date)?.millisecondsSince1970 ?? 0, source: .signedDate)
        _ = try appleChain.check((header, instant), role: .certificateChain)
    }

    /// Forgets every cached header and chain (e.g. after a root rotation drill).
    package func clearCaches() {
        headerCache.removeAll()
        chainCache.removeAll()
    }

    /// Whether the leaf key of `jws`'s cached header verifies through a precomputed table
    /// (``VerifierConfiguration/keyTableThreshold``), so tests know which path judged them.
    package func usesKeyTable(forHeaderOf jws: String) -> Bool {
        let utf8 = Array(jws.utf8)
        guard let dot = utf8.firstIndex(of: UInt8(ascii: ".")) else { return false }
        return headerCache.value(for: PrehashedBytes(Array(utf8[..<dot])))?.leafKey?.hasTable ?? false
    }

    /// Number of cached header segments and verified certificate pairs (for metrics).
    package var cacheCounts: (headers: Int, chains: Int) { (headerCache.count, chainCache.count) }

    // MARK: - The order

    /// Steps 1–6 for one JWS of kind `Payload`, in ``verificationOrder``. `fallback`
    /// supplies the instant when the payload has no `signedDate` (notifications only).
    private func verified<Payload: ClaimedPayload>(
        _ raw: UnsafeRawBufferPointer, as kind: Payload.Type, role: JWSRole,
        claims: ClaimsPolicy<Payload>, fallback: (Payload) -> ValidationInstant? = { _ in nil },
        shape: (Payload) -> String? = { _ in nil }
    ) throws(RecordRejection) -> (jws: AuthenticatedJWS, payload: Payload, instant: ValidationInstant, chain: [X509Certificate]) {
        let compact = try compactJWS.check(raw, role: role)                                  // 1
        let jws = try signature.check(compact, role: role)                                   // 2
        let payload = try PayloadPolicy<Payload>().check(jws.payloadJSON, role: role)        // 3
        // Another kind of Apple's JWS decodes as this one too (every field is optional): say
        // what it is rather than fail a claim it does not carry (bundle_id_mismatch).
        if let problem = shape(payload) { throw RecordRejection(.malformedPayload, problem) }
        let signedDate = payload.signedDate?.millisecondsSince1970
        let instant = try validationInstant.check(signedDate, role: role, orElse: { fallback(payload) })  // 4
        let chain = try appleChain.check((jws.header, instant), role: role)                  // 5
        try claims.check(payload, role: role)                                                // 6
        return (jws, payload, instant, chain)
    }

    // MARK: - Payload kinds

    private func verifyNotificationResult(_ raw: UnsafeRawBufferPointer) -> Result<VerifiedNotification, RecordRejection> {
        Result { () throws(RecordRejection) in try notification(raw) }
    }

    private func notification(_ raw: UnsafeRawBufferPointer) throws(RecordRejection) -> VerifiedNotification {
        // Outer steps 1–6 before the nested JWS (step 7), so a notification from another app
        // or another root is reported as such, not as a nested failure.
        let (jws, payload, instant, chain) = try verified(
            raw, as: ResponseBodyV2DecodedPayload.self, role: .notification, claims: notificationClaims,
            fallback: nestedInstant)
        let (transaction, renewal, appTransaction) = try nested(payload)                     // 7
        return VerifiedNotification(
            payload: payload, payloadJSON: jws.payloadJSON, transaction: transaction, renewalInfo: renewal,
            appTransaction: appTransaction,
            effectiveDate: instant.date, effectiveDateSource: instant.source, signingCertificate: jws.header.leaf,
            certificateChain: chain)
    }

    /// Verifies a transaction the app's backend relays (the webhook's purchase path): as
    /// ``verifyTransaction(_:)-(String)``, and a payload without `transactionId` (a
    /// notification's or a renewal info's JWS, which decode as a transaction too) is
    /// `malformed_payload` saying what it probably is, instead of failing a claim it does not
    /// carry (`bundle_id_mismatch`). Apple's library has no such check; Apple's own JWS never
    /// reaches this path.
    package func verifyRelayedTransaction(_ jws: String) throws(RecordRejection) -> VerifiedTransaction {
        var jws = jws
        return try jws.withUTF8 { raw in
            Result { () throws(RecordRejection) in try transaction(UnsafeRawBufferPointer(raw), requiringTransactionId: true) }
        }.get()
    }

    private func transaction(_ raw: UnsafeRawBufferPointer, requiringTransactionId: Bool = false) throws(RecordRejection) -> VerifiedTransaction {
        let (jws, payload, instant, chain) = try verified(
            raw, as: JWSTransactionDecodedPayload.self, role: .transaction, claims: transactionClaims,
            shape: { payload in
                guard requiringTransactionId, payload.transactionId == nil else { return nil }
                let what = payload.originalTransactionId == nil
                    ? "a notification's signedPayload or another kind of JWS" : "a signedRenewalInfo, probably"
                return "this JWS carries no transactionId: it is not a signed transaction (\(what)); send Transaction.jwsRepresentation"
            })
        return VerifiedTransaction(
            payload: payload, payloadJSON: jws.payloadJSON, effectiveDate: instant.date,
            effectiveDateSource: instant.source, signingCertificate: jws.header.leaf,
            certificateChain: chain)
    }

    private func renewalInfo(_ raw: UnsafeRawBufferPointer) throws(RecordRejection) -> VerifiedRenewalInfo {
        let (jws, payload, instant, chain) = try verified(
            raw, as: JWSRenewalInfoDecodedPayload.self, role: .renewalInfo, claims: renewalInfoClaims)
        return VerifiedRenewalInfo(
            payload: payload, payloadJSON: jws.payloadJSON, effectiveDate: instant.date,
            effectiveDateSource: instant.source, signingCertificate: jws.header.leaf,
            certificateChain: chain)
    }

    private func appTransaction(_ raw: UnsafeRawBufferPointer) throws(RecordRejection) -> VerifiedAppTransaction {
        // Apple's libraries judge an app transaction at its receiptCreationDate.
        let (jws, payload, instant, chain) = try verified(
            raw, as: JWSAppTransactionDecodedPayload.self, role: .appTransaction, claims: appTransactionClaims,
            fallback: { $0.receiptCreationDate.map { ValidationInstant(milliseconds: $0.millisecondsSince1970, source: .signedDate) } })
        return VerifiedAppTransaction(
            payload: payload, payloadJSON: jws.payloadJSON, effectiveDate: instant.date, signingCertificate: jws.header.leaf,
            certificateChain: chain)
    }

    private func realtimeRequest(_ raw: UnsafeRawBufferPointer) throws(RecordRejection) -> VerifiedRealtimeRequest {
        let (jws, payload, instant, chain) = try verified(
            raw, as: DecodedRealtimeRequestBody.self, role: .realtimeRequest, claims: realtimeRequestClaims,
            shape: { payload in
                // A notification or a transaction decodes as this model too (every field is
                // optional): it lacks the request's own fields.
                let missing = payload.missingFields
                return missing.isEmpty
                    ? nil : "not a real-time retention request: \(missing.joined(separator: ", ")) missing (Apple sends all seven)"
            })
        return VerifiedRealtimeRequest(
            payload: payload, payloadJSON: jws.payloadJSON, effectiveDate: instant.date, signingCertificate: jws.header.leaf,
            certificateChain: chain)
    }

    /// A notification without `signedDate` (early V2 notifications) is judged at its nested
    /// transaction's date, else its nested renewal info's. That date is only trusted because
    /// the nested JWS is fully verified afterwards (step 7), at that same date; a forged one
    /// fails there.
    private func nestedInstant(_ payload: ResponseBodyV2DecodedPayload) -> ValidationInstant? {
        if let date = claimedSignedDate(ofNested: payload.data?.signedTransactionInfo, as: JWSTransactionDecodedPayload.self, role: .transaction) {
            return ValidationInstant(milliseconds: date, source: .nestedTransactionSignedDate)
        }
        if let date = claimedSignedDate(ofNested: payload.data?.signedRenewalInfo, as: JWSRenewalInfoDecodedPayload.self, role: .renewalInfo) {
            return ValidationInstant(milliseconds: date, source: .nestedRenewalInfoSignedDate)
        }
        return nil
    }

    /// The signedDate a nested JWS claims after steps 1–3 (its chain is judged later, when
    /// the nested JWS is verified in full); nil when unreadable.
    private func claimedSignedDate<Payload: ClaimedPayload>(ofNested jws: String?, as type: Payload.Type, role: JWSRole) -> Int64? {
        guard var text = jws else { return nil }
        return text.withUTF8 { raw -> Int64? in
            guard let compact = try? compactJWS.check(UnsafeRawBufferPointer(raw), role: role),
                  let authenticated = try? signature.check(compact, role: role),
                  let payload = try? PayloadPolicy<Payload>().check(authenticated.payloadJSON, role: role)
            else { return nil }
            return payload.signedDate?.millisecondsSince1970
        }
    }

    /// Step 7: the nested JWS, each verified in full on its own.
    private func nested(
        _ payload: ResponseBodyV2DecodedPayload
    ) throws(RecordRejection) -> (VerifiedTransaction?, VerifiedRenewalInfo?, VerifiedAppTransaction?) {
        var transaction: VerifiedTransaction?
        var renewal: VerifiedRenewalInfo?
        var appTransaction: VerifiedAppTransaction?
        if let signed = payload.data?.signedTransactionInfo {
            do {
                transaction = try verifyTransaction(signed)
            } catch {
                throw RecordRejection(.nestedJWSInvalid, "data.signedTransactionInfo failed verification: \(error.reason): \(error.detail)")
            }
        }
        if let signed = payload.data?.signedRenewalInfo {
            do {
                renewal = try verifyRenewalInfo(signed)
            } catch {
                throw RecordRejection(.nestedJWSInvalid, "data.signedRenewalInfo failed verification: \(error.reason): \(error.detail)")
            }
        }
        if let signed = payload.appData?.signedAppTransactionInfo {
            do {
                appTransaction = try verifyAppTransaction(signed)
            } catch {
                throw RecordRejection(.nestedJWSInvalid, "appData.signedAppTransactionInfo failed verification: \(error.reason): \(error.detail)")
            }
        }
        return (transaction, renewal, appTransaction)
    }

    private func withBytes<R>(_ bytes: some Collection<UInt8>, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if let result = bytes.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) { return result }
        return Array(bytes).withUnsafeBytes(body)
    }
}
