/// Get Message List's answer.
public struct RetentionMessageList: Sendable, Hashable, Codable {
    public struct Item: Sendable, Hashable, Codable {
        public var messageIdentifier: String
        /// `PENDING`, `APPROVED` or `REJECTED`.
        public var messageState: String?
    }

    public var messageIdentifiers: [Item]

    public init(messageIdentifiers: [Item]) { self.messageIdentifiers = messageIdentifiers }
}

/// Get Image List's answer.
public struct RetentionImageList: Sendable, Hashable, Codable {
    public struct Item: Sendable, Hashable, Codable {
        public var imageIdentifier: String
        /// `PENDING`, `APPROVED` or `REJECTED`.
        public var imageState: String?
        /// `FULL_SIZE` (the default when absent) or `BULLET_POINT`.
        public var imageSize: String?
    }

    public var imageIdentifiers: [Item]

    public init(imageIdentifiers: [Item]) { self.imageIdentifiers = imageIdentifiers }
}

/// The realtime URL of one environment (Get Realtime URL; Configure's body).
public struct RealtimeURLConfiguration: Sendable, Hashable, Codable {
    public var realtimeURL: String

    public init(realtimeURL: String) { self.realtimeURL = realtimeURL }
}

/// A product's default message in one locale (Configure / Get Default Message).
public struct DefaultMessageConfiguration: Sendable, Hashable, Codable {
    public var messageIdentifier: String

    public init(messageIdentifier: String) { self.messageIdentifier = messageIdentifier }
}

/// The parameters Apple runs a performance test with, returned when it starts.
public struct PerformanceTestConfig: Sendable, Hashable, Codable {
    public var maxConcurrentRequests: Int64
    public var totalRequests: Int64
    /// Milliseconds.
    public var totalDuration: Int64
    /// Milliseconds (Apple's page gives no unit; about 700).
    public var responseTimeThreshold: Int64
    /// Percent.
    public var successRateThreshold: Int32

    public init(maxConcurrentRequests: Int64, totalRequests: Int64, totalDuration: Int64, responseTimeThreshold: Int64, successRateThreshold: Int32) {
        self.maxConcurrentRequests = maxConcurrentRequests
        self.totalRequests = totalRequests
        self.totalDuration = totalDuration
        self.responseTimeThreshold = responseTimeThreshold
        self.successRateThreshold = successRateThreshold
    }
}

/// Initiate Performance Test's answer.
public struct PerformanceTestStart: Sendable, Hashable, Codable {
    public var config: PerformanceTestConfig
    /// What Get Performance Test Results takes.
    public var requestId: String

    public init(config: PerformanceTestConfig, requestId: String) {
        self.config = config
        self.requestId = requestId
    }
}

/// Get Performance Test Results' answer.
public struct PerformanceTestResult: Sendable, Hashable, Codable {
    /// Response times in milliseconds.
    public struct ResponseTimes: Sendable, Hashable, Codable {
        public var average: Int64?
        public var p50: Int64?
        public var p90: Int64?
        public var p95: Int64?
        public var p99: Int64?

        public init(average: Int64? = nil, p50: Int64? = nil, p90: Int64? = nil, p95: Int64? = nil, p99: Int64? = nil) {
            self.average = average
            self.p50 = p50
            self.p90 = p90
            self.p95 = p95
            self.p99 = p99
        }
    }

    public var config: PerformanceTestConfig?
    /// The URL tested.
    public var target: String?
    /// `PENDING` (still running), `PASS` or `FAIL`.
    public var result: String
    /// Percent.
    public var successRate: Int32?
    public var numPending: Int32?
    public var responseTimes: ResponseTimes?
    /// Failed send attempts by Apple's `sendAttemptResult`.
    public var failures: [String: Int64]?

    public init(
        config: PerformanceTestConfig? = nil, target: String? = nil, result: String, successRate: Int32? = nil, numPending: Int32? = nil,
        responseTimes: ResponseTimes? = nil, failures: [String: Int64]? = nil
    ) {
        self.config = config
        self.target = target
        self.result = result
        self.successRate = successRate
        self.numPending = numPending
        self.responseTimes = responseTimes
        self.failures = failures
    }

    /// Whether Apple is still running it.
    public var isPending: Bool { result == "PENDING" }
}
