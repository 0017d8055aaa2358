import Foundation
import SignetCore
import SignetOpenSSL

/// How far the `appstore_statuses` source (a `signet reconcile`) got: the purchases it was asked
/// about (by digest) and how many of them, from the first, are done (their statuses committed,
/// or Apple knew none). A restart with the same list resumes after them; another list starts over.
package struct AppStoreStatusCheckpoint: Codable, Sendable, Equatable {
    package static let currentVersion = 1

    package var version = Self.currentVersion
    /// SHA-256 (hex) of the ids, one per line, in order: which list this is.
    package var listDigest: String
    package var total: Int
    /// The ids done, counted from the first.
    package var done: Int
    /// Statuses committed so far, and ids Apple knew no subscription of (4040010).
    package var statuses: Int
    package var notFound: Int
    package var environment: String
    package var bundleId: String
    /// The last id done, for a list in ascending order (`--all`): a list that changed since (new
    /// purchases arrived) resumes after it.
    package var lastDone: String?
    /// Whether the list is in ascending order.
    package var ascending: Bool?

    package init(ids: [String], environment: String, bundleId: String) {
        self.init(listDigest: Self.digest(ids), total: ids.count, environment: environment, bundleId: bundleId)
    }

    /// A fresh checkpoint of a list known by its ``digest(_:)`` and length (a paged list).
    package init(listDigest: String, total: Int, environment: String, bundleId: String) {
        self.listDigest = listDigest
        self.total = total
        done = 0
        statuses = 0
        notFound = 0
        self.environment = environment
        self.bundleId = bundleId
    }

    package var isFinished: Bool { done >= total }

    /// The digest of a list of ids.
    package static func digest(_ ids: [String]) -> String {
        var digest = ListDigest()
        for id in ids { digest.add(id) }
        return digest.finish()
    }

    /// ``digest(_:)`` of a list met one id at a time.
    package struct ListDigest {
        private var stream = SHA256.Stream()
        private var first = true

        package init() {}

        package mutating func add(_ id: String) {
            if !first { stream.update("\n") }
            first = false
            stream.update(id)
        }

        /// The hex digest; the list ends here.
        package mutating func finish() -> String { SHA256.hex(stream.finish()) }
    }

    /// The checkpoint at `path`, nil when there is none.
    package static func load(_ path: String) throws -> AppStoreStatusCheckpoint? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            let checkpoint = try JSONDecoder().decode(AppStoreStatusCheckpoint.self, from: Data(contentsOf: URL(fileURLWithPath: path)))
            guard checkpoint.version == currentVersion else {
                throw SourceError("version \(checkpoint.version), this signet writes \(currentVersion)")
            }
            // A file edited by hand must not send the source to an id before the first or after the last.
            guard checkpoint.total >= 0, (0...checkpoint.total).contains(checkpoint.done), checkpoint.statuses >= 0,
                checkpoint.notFound >= 0
            else {
                throw SourceError("done \(checkpoint.done) of \(checkpoint.total) is not a count of ids")
            }
            return checkpoint
        } catch {
            throw SourceError("the reconcile checkpoint '\(path)' is unreadable (\(error)); remove it (or use --restart) to start over")
        }
    }

    /// Replaces the file atomically (`AtomicFile`). Blocking.
    package func save(to path: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try AtomicFile.write(try encoder.encode(self), to: path, what: "the reconcile checkpoint")
    }
}

/// The name of ``AppStoreStatusCheckpoint`` before the status source's types were named after it.
@available(*, deprecated, renamed: "AppStoreStatusCheckpoint")
package typealias ReconcileCheckpoint = AppStoreStatusCheckpoint
