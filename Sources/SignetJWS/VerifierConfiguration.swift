public import AppStoreModels
public import Foundation
public import SignetOpenSSL

/// Everything an ``AppStoreVerifier`` checks against.
///
/// Only configured (non-nil) claims are checked: leave `bundleId` nil to accept any
/// app. Trust comes from `roots` and nothing else.
public struct VerifierConfiguration: Sendable {
    /// Trust anchors. Default: Apple Root CA - G3 only.
    public var roots: [X509Certificate]
    /// Accepted `environment` claims (notification: the claim source's; transaction and
    /// renewal info: their own): a payload must claim one of them, and is then checked by that
    /// environment's rules (``appAppleId`` in Production only). Several: a deployment that takes
    /// Production and the Sandbox purchases of TestFlight and App Review. Empty: not checked.
    public var environments: Set<AppStoreEnvironment>
    /// The accepted environment when exactly one is; setting it accepts that one only (nil: any).
    public var environment: AppStoreEnvironment? {
        get { environments.count == 1 ? environments.first : nil }
        set { environments = newValue.map { [$0] } ?? [] }
    }
    /// Expected `bundleId` (notifications and transactions; renewal info has none). nil: not checked.
    public var bundleId: String?
    /// Expected `appAppleId` of notifications, compared only in Production (Apple sends
    /// none in Sandbox): when ``environment`` is `.production`, or, with several or no
    /// environments configured, when the notification itself says Production. nil: not checked.
    public var appAppleId: Int64?
    /// At which instant certificate validity is judged. Default ``VerificationDateRule/signedDate``.
    public var dateRule: VerificationDateRule
    /// How far a `signedDate` may lie ahead of ``now`` before it is refused
    /// (`signed_date_in_future`). Default 5 minutes.
    public var maxFutureSkew: Duration
    /// Verified `(x5c[0], x5c[1])` pairs remembered (0 disables). Default 256.
    public var chainCacheCapacity: Int
    /// Parsed JWS header segments remembered (0 disables). Default 256.
    public var headerCacheCapacity: Int
    /// The clock (tests pin it).
    public var now: @Sendable () -> Date
    /// Signatures a leaf key must carry under a chain that verified before its multiples are
    /// precomputed (`P256KeyTable`: about 26 ms and 150 KB once, then each ES256 verification
    /// in about half the time). 0: never. Tests set 1 to judge every forgery on that path.
    package var keyTableThreshold = 256

    /// What to check. Give `environment` (or `environments`) and `bundleId` in production:
    /// without them a notification of any app and store verifies. `appAppleId` is required
    /// with Production.
    public init(
        roots: [X509Certificate] = AppleRoots.all,
        environment: AppStoreEnvironment? = nil,
        environments: Set<AppStoreEnvironment> = [],
        bundleId: String? = nil,
        appAppleId: Int64? = nil,
        dateRule: VerificationDateRule = .signedDate,
        maxFutureSkew: Duration = .seconds(300),
        chainCacheCapacity: Int = 256,
        headerCacheCapacity: Int = 256,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.roots = roots
        self.environments = environments.union(environment.map { [$0] } ?? [])
        self.bundleId = bundleId
        self.appAppleId = appAppleId
        self.dateRule = dateRule
        self.maxFutureSkew = maxFutureSkew
        self.chainCacheCapacity = chainCacheCapacity
        self.headerCacheCapacity = headerCacheCapacity
        self.now = now
    }
}

/// Which instant a certificate chain is validated at.
public enum VerificationDateRule: String, Sendable, Hashable, CaseIterable {
    /// The payload's own `signedDate` (what Apple's library does with online checks off).
    ///
    /// A notification without `signedDate` (early 2022 V2 notifications) is validated at
    /// the `signedDate` of its nested `signedTransactionInfo`, else of its nested
    /// `signedRenewalInfo` — both verified first, at their own dates — and when it has
    /// neither, at the current time (Apple's fallback). Each nested JWS is validated at
    /// its own `signedDate`. This lets archived data verify after Apple's short-lived
    /// leaves expire, while a date outside the chain's validity is still refused.
    case signedDate
    /// Always the current time (like Apple's online mode): stricter, but old data whose
    /// leaf has since expired is refused.
    case currentTime
}

/// Why an ``AppStoreVerifier`` could not be built.
public struct VerifierConfigurationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public enum Kind: String, Sendable, Hashable {
        /// `roots` is empty: nothing could ever verify.
        case noRoots
        /// Environment Xcode / LocalTesting together with Apple's real root.
        case unsignedEnvironment
        /// Production accepted without `appAppleId`.
        case missingAppAppleId
        /// A numeric setting is out of range.
        case invalidSetting
        /// OpenSSL refused to build the trust store.
        case trustStore
    }

    /// What is wrong.
    public var kind: Kind
    /// The setting and how to fix it.
    public var message: String

    /// An error of `kind`, explained by `message`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "\(kind.rawValue): \(message)" }
}
