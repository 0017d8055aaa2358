import Foundation
import SignetCore

/// The last round trips, kept in a small JSON file beside the state (`state_file`), so
/// `signet appstore health` shows them from another process, and a restart keeps them.
package enum DeliveryHealthFile {
    /// How many round trips the file keeps.
    package static let kept = 48

    /// The round trips in `path`, oldest first; none when the file does not exist.
    package static func read(_ path: String) throws -> [DeliveryRoundTrip] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return try JSONDecoder().decode([DeliveryRoundTrip].self, from: data)
    }

    /// Appends `trip` to the file (atomically), keeping the newest ``kept``.
    static func append(_ trip: DeliveryRoundTrip, to path: String) throws {
        let trips = Array(((try? read(path)) ?? []).suffix(kept - 1)) + [trip]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
        try AtomicFile.write(try encoder.encode(trips), to: path, what: "delivery health file")
    }
}
