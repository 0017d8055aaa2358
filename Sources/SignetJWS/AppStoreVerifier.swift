import AppStoreModels
import Metrics
import Foundation
import SignetCore
import SignetOpenSSL

/// Verifies App Store signed data — notifications (`signedPayload`), transactions and
/// renewal info — the way Apple's App Store Server Library does, and stricter.
///
/// For every compact JWS, in this order (the first failure decides the reason code):
/// 1. exactly three segments, each strict base64url (`malformed_jws`); the header is a
///    JSON object (`malformed_jws`), `alg` is exactly `ES256` (`unsupported_algorithm`),
///    there is no `crit` (`unsupported_header`), and `x5c` holds exactly three standard
///    base64 DER certificates (`invalid_x5c`). `x5c[2]` must parse but is never trusted;
///    `jwk`, `jku`, `kid` and `x5u` are ignored.
/// 2. the signature is 64 raw bytes `r‖s` and verifies with `x5c[0]`'s P-256 key over
///    `header.payload` (`invalid_signature`). It is checked before the payload is parsed,
///    so unauthenticated JSON never reaches the decoder.
/// 3. the payload decodes (`malformed_jws` if it is not JSON, `malformed_payload` if a
///    field has the wrong type); `signedDate` is at most ``VerifierConfiguration/maxFutureSkew``
///    ahead of the clock (`signed_date_in_future`: Apple's library has no such check, but a
///    date in the future can only be a forgery or a broken clock, and accepting it would let
///    a payload choose a validation instant nobody has reached yet).
/// 4. `x5c[0]` → `x5c[1]` → a configured root verifies with OpenSSL at the date of
///    ``VerificationDateRule`` (`certificate_not_valid_at_signed_date` for validity problems,
///    `invalid_certificate_chain` for anything else, e.g. unknown root, bad signature, an
///    intermediate that is not a CA); the leaf carries 1.2.840.113635.100.6.11.1 and the
///    intermediate 1.2.840.113635.100.6.2.1 (`missing_apple_oid`).
/// 5. the configured claims match (`bundle_id_mismatch`, `app_apple_id_mismatch`,
///    `environment_mismatch`, checked in that order as Apple does).
/// 6. a notification's nested `signedTransactionInfo` and `signedRenewalInfo` pass steps
///    1–5 on their own (`nested_jws_invalid`, with the inner reason in the detail).
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
    public static let receiptSigningLeafOID = "1.2.840.113635.100.6.11.1"
    /// Apple's marker on the WWDR intermediate CA.
    public static let wwdrIntermediateOID = "1.2.840.113635.100.6.2.1"
    /// Inputs longer than this are refused before any work (real notifications are ~10–20 KB).
    public static let maximumJWSBytes = 1 << 20

    /// The configuration this verifier was built with.
    public let configuration: VerifierConfiguration
    private let chainVerifier: CertificateChainVerifier
    private let headerCache: BoundedCache<PrehashedBytes, ParsedJWSHeader>
    private let chainCache: BoundedCache<CertificatePairKey, VerifiedChainEntry>
    private let maxFutureSkewMilliseconds: Int64
    private let cacheMetrics = VerifierCacheMetrics()

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
        if let environment = configuration.environment,
           environment == .xcode || environment == .localTesting,
           configuration.roots.contains(where: AppleRoots.isAppleRootCAG3)
        {
            throw VerifierConfigurationError(
                .unsignedEnvironment,
                "environment \(environment.rawValue) is signed locally (by Xcode or a test key), never by Apple Root CA - G3. "
                    + "Apple's library skips signature checks there; Signet always verifies, so this verifier would reject everything. "
                    + "Use Sandbox/Production with Apple's root, or a private test root for \(environment.rawValue) data.")
        }
        if configuration.environment == .production && configuration.appAppleId == nil {
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
        self.configuration = configuration
        self.chainVerifier = CertificateChainVerifier(trustStore: store)
        self.headerCache = BoundedCache(capacity: configuration.headerCacheCapacity)
        self.chainCache = BoundedCache(capacity: configuration.chainCacheCapacity)
        let (seconds, attoseconds) = configuration.maxFutureSkew.components
        self.maxFutureSkewMilliseconds = seconds.multipliedReportingOverflow(by: 1000).overflow
            ? Int64.max / 2 : seconds * 1000 + attoseconds / 1_000_000_000_000_000
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

    /// Applies Signet's chain policy (step 4) to a leaf and intermediate at `date`, without
    /// a JWS: OpenSSL path validation to a configured root, chain length 3, Apple's marker
    /// OIDs, a CA intermediate, and a leaf allowed to sign. For tooling and chain tests.
    public func checkCertificateChain(leaf: X509Certificate, intermediate: X509Certificate, at date: Date) throws(RecordRejection) {
        let header = ParsedJWSHeader(leaf: leaf, intermediate: intermediate, claimedRoot: intermediate)
        let milliseconds = AppleTimestamp(date)?.millisecondsSince1970 ?? 0
        try checkChain(header, atMilliseconds: milliseconds, source: .signedDate, role: .certificateChain)
    }

    /// Forgets every cached header and chain (e.g. after a root rotation drill).
    public func clearCaches() {
        headerCache.removeAll()
        chainCache.removeAll()
    }

    /// Number of cached header segments and verified certificate pairs (for metrics).
    public var cacheCounts: (headers: Int, chains: Int) { (headerCache.count, chainCache.count) }

    // MARK: - Notifications

    private func verifyNotificationResult(_ raw: UnsafeRawBufferPointer) -> Result<VerifiedNotification, RecordRejection> {
        Result { () throws(RecordRejection) in try notification(raw) }
    }

    private func notification(_ raw: UnsafeRawBufferPointer) throws(RecordRejection) -> VerifiedNotification {
        let role = JWSRole.notification
        let jws = try authenticate(raw, role: role)
        let payload = try decode(ResponseBodyV2DecodedPayload.self, jws.payloadJSON, role: role)
        let nowMilliseconds = currentMilliseconds()
        let signedDate = payload.signedDate?.millisecondsSince1970
        try checkNotInFuture(signedDate, now: nowMilliseconds, role: role)

        let instant: Int64
        let source: VerificationDateSource
        if configuration.dateRule == .currentTime {
            (instant, source) = (nowMilliseconds, .currentTime)
        } else if let signedDate {
            (instant, source) = (signedDate, .signedDate)
        } else if let date = claimedSignedDate(ofNested: payload.data?.signedTransactionInfo, as: JWSTransactionDecodedPayload.self, role: .transaction) {
            // No signedDate (early V2 notifications): judge the chain at the nested
            // transaction's date. That date is only trusted because the nested JWS is fully
            // verified below, at that same date; a forged one fails there.
            (instant, source) = (date, .nestedTransactionSignedDate)
        } else if let date = claimedSignedDate(ofNested: payload.data?.signedRenewalInfo, as: JWSRenewalInfoDecodedPayload.self, role: .renewalInfo) {
            (instant, source) = (date, .nestedRenewalInfoSignedDate)
        } else {
            (instant, source) = (nowMilliseconds, .currentTime)
        }
        // Outer chain and claims before the nested JWS, so a notification from another app or
        // another root is reported as such, not as a nested failure.
        try checkChain(jws.header, atMilliseconds: instant, source: source, role: role)
        try checkNotificationClaims(payload)
        let (transaction, renewal) = try nested(payload)

        return VerifiedNotification(
            payload: payload, payloadJSON: jws.payloadJSON, transaction: transaction, renewalInfo: renewal,
            effectiveDate: Self.date(instant), effectiveDateSource: source, signingCertificate: jws.header.leaf)
    }

    /// The signedDate a nested JWS claims, read after its signature check but before its
    /// chain check (the caller verifies it fully afterwards); nil when unreadable.
    private func claimedSignedDate<Payload: Decodable & NestedSignedDate>(
        ofNested jws: String?, as type: Payload.Type, role: JWSRole
    ) -> Int64? {
        guard var text = jws else { return nil }
        return text.withUTF8 { raw -> Int64? in
            guard let authenticated = try? authenticate(UnsafeRawBufferPointer(raw), role: role),
                let payload = try? decode(type, authenticated.payloadJSON, role: role)
            else { return nil }
            return payload.signedDate?.millisecondsSince1970
        }
    }

    private func nested(_ payload: ResponseBodyV2DecodedPayload) throws(RecordRejection) -> (VerifiedTransaction?, VerifiedRenewalInfo?) {
        var transaction: VerifiedTransaction?
        var renewal: VerifiedRenewalInfo?
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
        return (transaction, renewal)
    }

    /// Apple's claim source: `data`, else `summary`, else `externalPurchaseToken`, else `appData`.
    private func checkNotificationClaims(_ payload: ResponseBodyV2DecodedPayload) throws(RecordRejection) {
        let source: String
        if payload.data != nil { source = "data" }
        else if payload.summary != nil { source = "summary" }
        else if payload.externalPurchaseToken != nil { source = "externalPurchaseToken" }
        else if payload.appData != nil { source = "appData" }
        else { source = "(no data, summary, externalPurchaseToken or appData)" }
        let bundleId = payload.effectiveBundleId
        let appAppleId = payload.effectiveAppAppleId
        let environment = payload.effectiveEnvironment
        let context = Self.notificationContext(payload)

        if let expected = configuration.bundleId, bundleId != expected {
            throw RecordRejection(
                .bundleIdMismatch,
                "\(context): \(source).bundleId is \(Self.quote(bundleId)), this verifier expects \"\(expected)\" — another app's notifications are reaching this pipeline, or bundle_id is misconfigured")
        }
        if let expected = configuration.appAppleId, (configuration.environment ?? environment) == .production, appAppleId != expected {
            throw RecordRejection(
                .appAppleIdMismatch,
                "\(context): \(source).appAppleId is \(appAppleId.map(String.init) ?? "absent"), this verifier expects \(expected) (compared in Production only)")
        }
        if let expected = configuration.environment, environment != expected {
            throw RecordRejection(
                .environmentMismatch,
                "\(context): \(source).environment is \(Self.quote(environment?.rawValue)), this verifier expects \"\(expected.rawValue)\" — Sandbox and Production notifications must go to separately configured pipelines")
        }
    }

    // MARK: - Transactions and renewal info

    private func transaction(_ raw: UnsafeRawBufferPointer) throws(RecordRejection) -> VerifiedTransaction {
        let role = JWSRole.transaction
        let jws = try authenticate(raw, role: role)
        let payload = try decode(JWSTransactionDecodedPayload.self, jws.payloadJSON, role: role)
        let (instant, source) = try validationInstant(payload.signedDate, role: role)
        try checkChain(jws.header, atMilliseconds: instant, source: source, role: role)
        let context = "transaction \(payload.transactionId.map { "\"\($0)\"" } ?? "(no transactionId)")"
        if let expected = configuration.bundleId, payload.bundleId != expected {
            throw RecordRejection(
                .bundleIdMismatch, "\(context): bundleId is \(Self.quote(payload.bundleId)), this verifier expects \"\(expected)\"")
        }
        if let expected = configuration.environment, payload.environment != expected {
            throw RecordRejection(
                .environmentMismatch,
                "\(context): environment is \(Self.quote(payload.environment?.rawValue)), this verifier expects \"\(expected.rawValue)\"")
        }
        return VerifiedTransaction(
            payload: payload, payloadJSON: jws.payloadJSON, effectiveDate: Self.date(instant),
            effectiveDateSource: source, signingCertificate: jws.header.leaf)
    }

    private func renewalInfo(_ raw: UnsafeRawBufferPointer) throws(RecordRejection) -> VerifiedRenewalInfo {
        let role = JWSRole.renewalInfo
        let jws = try authenticate(raw, role: role)
        let payload = try decode(JWSRenewalInfoDecodedPayload.self, jws.payloadJSON, role: role)
        let (instant, source) = try validationInstant(payload.signedDate, role: role)
        try checkChain(jws.header, atMilliseconds: instant, source: source, role: role)
        // Renewal info carries no bundleId (Apple checks only the environment).
        if let expected = configuration.environment, payload.environment != expected {
            throw RecordRejection(
                .environmentMismatch,
                "renewal info for \(payload.originalTransactionId.map { "originalTransactionId \"\($0)\"" } ?? "(no originalTransactionId)"): environment is \(Self.quote(payload.environment?.rawValue)), this verifier expects \"\(expected.rawValue)\"")
        }
        return VerifiedRenewalInfo(
            payload: payload, payloadJSON: jws.payloadJSON, effectiveDate: Self.date(instant),
            effectiveDateSource: source, signingCertificate: jws.header.leaf)
    }

    private func validationInstant(_ signedDate: AppleTimestamp?, role: JWSRole) throws(RecordRejection) -> (Int64, VerificationDateSource) {
        let now = currentMilliseconds()
        let signed = signedDate?.millisecondsSince1970
        try checkNotInFuture(signed, now: now, role: role)
        if configuration.dateRule == .signedDate, let signed { return (signed, .signedDate) }
        return (now, .currentTime)
    }

    // MARK: - JWS structure and signature

    private struct AuthenticatedJWS {
        let header: ParsedJWSHeader
        let payloadJSON: [UInt8]
    }

    /// Steps 1 and 2: structure, header rules, ES256 signature with `x5c[0]`'s key.
    private func authenticate(_ raw: UnsafeRawBufferPointer, role: JWSRole) throws(RecordRejection) -> AuthenticatedJWS {
        guard !raw.isEmpty else { throw RecordRejection(.malformedJWS, "\(role.field) is empty") }
        guard raw.count <= Self.maximumJWSBytes else {
            throw RecordRejection(.malformedJWS, "\(role.field) is \(raw.count) bytes, more than the \(Self.maximumJWSBytes)-byte limit")
        }
        // memchr finds the dots at memory bandwidth (a byte loop was 5 % of the hot path).
        guard let base = raw.baseAddress else { throw RecordRejection(.malformedJWS, "\(role.field) is empty") }
        var dotOffsets: [Int] = []
        var cursor = 0
        while cursor < raw.count, dotOffsets.count < 3,
              let found = memchr(base + cursor, Int32(UInt8(ascii: ".")), raw.count - cursor)
        {
            let offset = base.distance(to: UnsafeRawPointer(found))
            dotOffsets.append(offset)
            cursor = offset + 1
        }
        guard dotOffsets.count == 2 else {
            let count = dotOffsets.count == 3 ? "more than 3" : "\(dotOffsets.count + 1)"
            throw RecordRejection(
                .malformedJWS, "\(role.field) has \(count) dot-separated segments; a compact JWS has exactly 3 (header.payload.signature)")
        }
        let dots = (dotOffsets[0], dotOffsets[1])
        let headerSegment = UnsafeRawBufferPointer(rebasing: raw[0..<dots.0])
        let payloadSegment = UnsafeRawBufferPointer(rebasing: raw[(dots.0 + 1)..<dots.1])
        let signatureSegment = UnsafeRawBufferPointer(rebasing: raw[(dots.1 + 1)...])
        let signingInput = UnsafeRawBufferPointer(rebasing: raw[0..<dots.1])

        let header = try parsedHeader(headerSegment, role: role)
        let payloadJSON: [UInt8]
        do {
            payloadJSON = try Base64.decodeURL(payloadSegment)
        } catch {
            throw RecordRejection(.malformedJWS, "\(role.field): the payload segment is not strict base64url (\(error))")
        }
        let signature: [UInt8]
        do {
            signature = try Base64.decodeURL(signatureSegment)
        } catch {
            throw RecordRejection(.malformedJWS, "\(role.field): the signature segment is not strict base64url (\(error))")
        }
        guard signature.count == 64 else {
            let hint = signature.first == 0x30 && (68...72).contains(signature.count)
                ? " (it looks DER-encoded; JWS ES256 requires raw r‖s, RFC 7518 §3.4)" : ""
            throw RecordRejection(.invalidSignature, "\(role.field): the ES256 signature is \(signature.count) bytes, not 64\(hint)")
        }
        guard let key = header.leafKey else {
            throw RecordRejection(.invalidCertificateChain, "\(role.field): \(header.leafKeyProblem ?? "the leaf certificate has no usable key")")
        }
        let digest = SHA256.hash(signingInput)
        let valid = signature.withUnsafeBytes { signatureBytes in
            digest.withUnsafeBytes { key.verifyES256(rawSignature: signatureBytes, digest: $0) }
        }
        guard valid else {
            throw RecordRejection(
                .invalidSignature,
                "\(role.field): the ES256 signature does not verify with the key of x5c[0] (\(header.leaf.subject), serial \(header.leaf.serialNumberHex)) — the data was altered or signed by another key")
        }
        return AuthenticatedJWS(header: header, payloadJSON: payloadJSON)
    }

    private func parsedHeader(_ segment: UnsafeRawBufferPointer, role: JWSRole) throws(RecordRejection) -> ParsedJWSHeader {
        guard headerCache.capacity > 0 else { return try ParsedJWSHeader.parse(segment: segment, role: role) }
        let key = PrehashedBytes(segment)
        if let cached = headerCache.value(for: key) {
            cacheMetrics.headerHits.increment()
            return cached
        }
        cacheMetrics.headerMisses.increment()
        let parsed = try ParsedJWSHeader.parse(segment: segment, role: role)
        headerCache.insert(parsed, for: key)
        return parsed
    }

    // MARK: - Payload

    private func decode<T: Decodable>(_ type: T.Type, _ json: [UInt8], role: JWSRole) throws(RecordRejection) -> T {
        // A JSON object must start with '{' (after optional whitespace).
        let first = json.first { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }
        guard first == UInt8(ascii: "{") else {
            throw RecordRejection(.malformedJWS, "\(role.field): the payload is not a JSON object")
        }
        do {
            return try AppStoreJSON.decode(type, from: json)
        } catch let error as AppStoreJSONError {
            switch error.kind {
            case .typeMismatch, .numberOutOfRange:
                throw RecordRejection(.malformedPayload, "\(role.field): the payload does not match the \(T.self) model: \(error)")
            default:
                throw RecordRejection(.malformedJWS, "\(role.field): the payload is not valid JSON: \(error)")
            }
        } catch {
            throw RecordRejection(.malformedPayload, "\(role.field): the payload does not decode as \(T.self): \(error)")
        }
    }

    // MARK: - Dates and chain

    private func currentMilliseconds() -> Int64 {
        AppleTimestamp(configuration.now())?.millisecondsSince1970 ?? 0
    }

    private func checkNotInFuture(_ signedDate: Int64?, now: Int64, role: JWSRole) throws(RecordRejection) {
        guard let signedDate else { return }
        let (limit, overflow) = now.addingReportingOverflow(maxFutureSkewMilliseconds)
        if !overflow && signedDate > limit {
            throw RecordRejection(
                .signedDateInFuture,
                "\(role.field): signedDate \(Self.iso(signedDate)) is \(Self.span(signedDate.subtractingReportingOverflow(now).partialValue)) ahead of this host's clock (\(Self.iso(now))); at most \(Self.span(maxFutureSkewMilliseconds)) is allowed — forged, or this host's clock is wrong")
        }
    }

    /// Step 4, cache first. The cache only ever holds chains that passed every check;
    /// a date outside a cached chain's window is re-verified from scratch, so the
    /// verdict and the reason are exactly those of an uncached verification.
    private func checkChain(
        _ header: ParsedJWSHeader, atMilliseconds milliseconds: Int64, source: VerificationDateSource, role: JWSRole
    ) throws(RecordRejection) {
        let seconds = Self.floorSeconds(milliseconds)
        if let entry = chainCache.value(for: header.chainKey), entry.isValid(atEpochSeconds: seconds) {
            cacheMetrics.chainHits.increment()
            return
        }
        cacheMetrics.chainMisses.increment()

        let chain: VerifiedChain
        do {
            chain = try chainVerifier.verify(leaf: header.leaf, intermediates: [header.intermediate], atEpochSeconds: seconds)
        } catch {
            let when = "\(Self.iso(milliseconds)) (\(Self.describe(source)))"
            if error.isValidityProblem {
                throw RecordRejection(
                    .certificateNotValidAtSignedDate,
                    "\(role.field): a certificate of the x5c chain is not valid at \(when): \(error). Leaf \(header.leaf.subject) is valid \(Self.iso(header.leaf.notBefore)) – \(Self.iso(header.leaf.notAfter))")
            }
            let hint: String
            switch error.kind {
            case .unableToGetIssuer:
                hint = " — the chain does not lead to a configured root (roots: \(configuration.roots.map(\.subject).joined(separator: " | ")))"
            case .badSignature:
                hint = " — a certificate is not signed by the certificate above it"
            case .invalidCA:
                hint = " — the issuing certificate is not a CA"
            default:
                hint = ""
            }
            throw RecordRejection(.invalidCertificateChain, "\(role.field): certificate chain rejected at \(when): \(error)\(hint)")
        }
        // Apple's chain policy: exactly leaf → intermediate → root, each with its marker OID.
        guard chain.certificates.count == 3 else {
            throw RecordRejection(
                .invalidCertificateChain,
                "\(role.field): the verified chain has \(chain.certificates.count) certificates; App Store chains are leaf → intermediate → root")
        }
        let leaf = chain.certificates[0]
        let intermediate = chain.certificates[1]
        guard intermediate.hasExtension(oid: Self.wwdrIntermediateOID) else {
            throw RecordRejection(
                .missingAppleOID,
                "\(role.field): the intermediate (\(intermediate.subject)) lacks Apple's WWDR marker OID \(Self.wwdrIntermediateOID)")
        }
        guard leaf.hasExtension(oid: Self.receiptSigningLeafOID) else {
            throw RecordRejection(
                .missingAppleOID,
                "\(role.field): the leaf (\(leaf.subject)) lacks Apple's receipt-signing marker OID \(Self.receiptSigningLeafOID)")
        }
        guard intermediate.isCA else {
            // OpenSSL already refuses a non-CA issuer; kept so the policy reads complete here.
            throw RecordRejection(.invalidCertificateChain, "\(role.field): the intermediate (\(intermediate.subject)) is not a CA")
        }
        if let usage = leaf.keyUsage, !usage.contains(.digitalSignature) {
            throw RecordRejection(
                .invalidCertificateChain, "\(role.field): the leaf (\(leaf.subject)) has keyUsage without digitalSignature, so it may not sign data")
        }
        guard let key = header.leafKey else {
            throw RecordRejection(.invalidCertificateChain, "\(role.field): \(header.leafKeyProblem ?? "the leaf certificate has no usable key")")
        }
        chainCache.insert(
            VerifiedChainEntry(
                validFromEpochSeconds: chain.validFromEpochSeconds, validUntilEpochSeconds: chain.validUntilEpochSeconds,
                leafKey: key),
            for: header.chainKey)
    }

    // MARK: - Helpers

    private func withBytes<R>(_ bytes: some Collection<UInt8>, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if let result = bytes.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) { return result }
        return Array(bytes).withUnsafeBytes(body)
    }

    /// Whole seconds, rounded toward negative infinity. Written with `/` and `%` only, which
    /// cannot overflow for a divisor of 1000, because `milliseconds` is untrusted (an attacker's
    /// self-signed payload may say Int64.min, and this runs before the chain is judged).
    static func floorSeconds(_ milliseconds: Int64) -> Int64 {
        milliseconds / 1000 - (milliseconds % 1000 < 0 ? 1 : 0)
    }

    static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    static func iso(_ milliseconds: Int64) -> String {
        iso(date(milliseconds))
    }

    static func iso(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true))
    }

    private static func span(_ milliseconds: Int64) -> String {
        let seconds = Double(milliseconds) / 1000
        // A Double day count of any Int64 span fits in Int (|x| < 1.1e11), so `Int(_:)` cannot trap.
        if seconds < 120 { return "\(Int(seconds.rounded()))s" }
        if seconds < 7200 { return "\(Int((seconds / 60).rounded()))min" }
        if seconds < 172_800 { return "\(Int((seconds / 3600).rounded()))h" }
        return "\(Int((seconds / 86400).rounded()))d"
    }

    private static func describe(_ source: VerificationDateSource) -> String {
        switch source {
        case .signedDate: "the payload's signedDate"
        case .nestedTransactionSignedDate: "no signedDate; the nested transaction's signedDate"
        case .nestedRenewalInfoSignedDate: "no signedDate; the nested renewal info's signedDate"
        case .currentTime: "the current time"
        }
    }

    private static func quote(_ value: String?) -> String {
        value.map { "\"\($0)\"" } ?? "absent"
    }

    private static func notificationContext(_ payload: ResponseBodyV2DecodedPayload) -> String {
        let type = payload.notificationType?.rawValue ?? "notification"
        let uuid = payload.notificationUUID.map { " \($0)" } ?? ""
        return "\(type)\(uuid)"
    }
}

/// What the chain cache remembers about a `(x5c[0], x5c[1])` pair that passed every
/// chain check: the combined validity window and the leaf's key.
final class VerifiedChainEntry: Sendable {
    let validFromEpochSeconds: Int64
    let validUntilEpochSeconds: Int64
    let leafKey: ECPublicKey

    init(validFromEpochSeconds: Int64, validUntilEpochSeconds: Int64, leafKey: ECPublicKey) {
        self.validFromEpochSeconds = validFromEpochSeconds
        self.validUntilEpochSeconds = validUntilEpochSeconds
        self.leafKey = leafKey
    }

    /// OpenSSL's rule for every certificate at once: `notBefore ≤ t < notAfter`.
    func isValid(atEpochSeconds seconds: Int64) -> Bool {
        validFromEpochSeconds <= seconds && seconds < validUntilEpochSeconds
    }
}

/// Payloads that carry Apple's `signedDate` (used for the no-signedDate notification rule).
protocol NestedSignedDate {
    var signedDate: AppleTimestamp? { get }
}

extension JWSTransactionDecodedPayload: NestedSignedDate {}
extension JWSRenewalInfoDecodedPayload: NestedSignedDate {}
