import Foundation
package import SignetAppStoreAPI
import SignetCore

/// What the `appstore_history` source (a `signet backfill`) has committed: its window and, per
/// sub-window, the request and the pagination token to resume after. Kept as JSON in one file,
/// replaced atomically.
///
/// A page is recorded only once every record made from it was committed by the runner
/// (state written, every sink acknowledged), so resuming after the recorded token never
/// skips a notification; it may fetch the page after it again, which dedupe drops.
package struct AppStoreHistoryCheckpoint: Codable, Sendable, Equatable {
    /// One sub-window's progress.
    package struct SubWindow: Codable, Sendable, Equatable {
        /// The body to send (its start may have been clamped by the client on 4000012).
        package var request: NotificationHistoryRequest
        /// The token after the last committed page; nil before the first page or when done.
        package var paginationToken: String?
        /// Pages committed.
        package var pages: Int
        /// Notifications committed.
        package var notifications: Int
        /// Whether its last page was committed.
        package var done: Bool
        /// The latest send date among the committed notifications (for the estimate of time left).
        package var coveredUntil: Int64?

        package init(request: NotificationHistoryRequest) {
            self.request = request
            self.pages = 0
            self.notifications = 0
            self.done = false
        }

        /// How much of its span is behind it, in milliseconds.
        package var coveredMilliseconds: Int64 {
            let span = max(0, request.endDate - request.startDate)
            if done { return span }
            guard let coveredUntil else { return 0 }
            return min(span, max(0, coveredUntil - request.startDate))
        }
    }

    package static let currentVersion = 1

    package var version: Int
    package var window: AppStoreHistoryWindow
    package var onlyFailures: Bool
    /// The store and app the pages come from: a checkpoint of another one is not resumed.
    package var environment: String
    package var bundleId: String
    /// When the backfill started (UNIX ms).
    package var startedAt: Int64
    package var subWindows: [SubWindow]

    package init(window: AppStoreHistoryWindow, onlyFailures: Bool, environment: String, bundleId: String, subWindowCount: Int, startedAt: Int64) {
        self.version = Self.currentVersion
        self.window = window
        self.onlyFailures = onlyFailures
        self.environment = environment
        self.bundleId = bundleId
        self.startedAt = startedAt
        self.subWindows = window.split(into: subWindowCount).map { part in
            SubWindow(request: NotificationHistoryRequest(
                startDate: part.start, endDate: part.end, onlyFailures: onlyFailures ? true : nil))
        }
    }

    /// Whether every sub-window's last page was committed.
    package var isFinished: Bool { subWindows.allSatisfy(\.done) }
    package var pages: Int { subWindows.reduce(0) { $0 + $1.pages } }
    package var notifications: Int { subWindows.reduce(0) { $0 + $1.notifications } }
    package var coveredMilliseconds: Int64 { subWindows.reduce(0) { $0 + $1.coveredMilliseconds } }

    /// The checkpoint at `path`, nil when there is none.
    /// - Throws: `SourceError` when the file exists but is not a checkpoint.
    package static func load(_ path: String) throws -> AppStoreHistoryCheckpoint? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            let checkpoint = try JSONDecoder().decode(AppStoreHistoryCheckpoint.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
            guard checkpoint.version == currentVersion else {
                throw SourceError("version \(checkpoint.version), this signet writes \(currentVersion)")
            }
            return checkpoint
        } catch {
            throw SourceError("the backfill checkpoint '\(path)' is unreadable (\(error)); remove it (or use --restart) to start over")
        }
    }

    /// Writes the checkpoint so that a crash at any point leaves the old or the new one
    /// (`AtomicFile`). Blocking: call it on a `BlockingExecutor`.
    package func save(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try AtomicFile.write(try encoder.encode(self), to: path, what: "the backfill checkpoint")
    }
}

/// The name of ``AppStoreHistoryCheckpoint`` before the history source's types were named after it.
@available(*, deprecated, renamed: "AppStoreHistoryCheckpoint")
package typealias BackfillCheckpoint = AppStoreHistoryCheckpoint
