import Foundation

/// The process's open-files limit (`RLIMIT_NOFILE`).
///
/// A listener's connections, the store's files and Kafka's sockets all take descriptors;
/// Debian's soft default of 1024 is far below the hard limit a service may use. `signet
/// run` raises the soft limit to the hard one at start and logs the figure, so a flood of
/// connections meets the listeners' own limits (`max_connections`), not EMFILE.
enum DescriptorLimit {
    /// Raises the soft limit to the hard limit; returns (before, after), or nil when it
    /// cannot be read.
    static func raiseToHardLimit() -> (before: UInt64, after: UInt64)? {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return nil }
        let before = UInt64(limit.rlim_cur)
        guard limit.rlim_cur < limit.rlim_max else { return (before, before) }
        limit.rlim_cur = limit.rlim_max
        guard setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return (before, before) }
        return (before, UInt64(limit.rlim_cur))
    }
}
