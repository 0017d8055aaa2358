import Foundation
import Synchronization

/// The pauses Apple asked this process for (a 429 with Retry-After), by environment and
/// endpoint class, until they end: what the console's operations page lists beside
/// `signet_appstore_api_paused_until_seconds`.
package enum AppStoreAPIPauses {
    package struct Pause: Sendable, Hashable {
        package var environment: String
        package var endpoint: String
        /// When requests go again (ms since 1970).
        package var until: Int64
    }

    private static let pauses = Mutex<[String: Pause]>([:])

    static func record(_ pause: Pause) {
        pauses.withLock { $0["\(pause.environment) \(pause.endpoint)"] = pause }
    }

    /// The pauses still in force at `now`, by environment then endpoint.
    package static func current(now: Int64) -> [Pause] {
        pauses.withLock { pauses in
            pauses = pauses.filter { $0.value.until > now }
            return pauses.values.sorted { ($0.environment, $0.endpoint) < ($1.environment, $1.endpoint) }
        }
    }
}
