import Hummingbird
import HummingbirdCore
import Logging

/// A listener's connection budget: at most `maximum` open connections, more wait in the
/// listen backlog (the server stops accepting, so no descriptor is spent on them). Once all
/// are open, the longest-idle keep-alive connection is closed (``IdleConnections``), so a
/// waiting client gets its slot at once rather than after that connection's idle timeout;
/// only connections with a request in flight, or none sent yet, hold slots for longer.
///
/// Hummingbird calls it on the server's accept loop only.
///
/// Each listener has its own, so idle connections to the admin listener cannot use up the
/// descriptors the webhook needs to answer Apple. Reaching the limit when no idle
/// connection can make room is logged once, with the count, and again only after the
/// connections fell below half of it.
struct ConnectionLimit: AvailableConnectionsDelegate {
    /// The listen backlog of every listener. Hummingbird's 256 overflowed in a burst of 1000
    /// clients: the kernel dropped the SYNs past it, and each such client (a legitimate one
    /// among them) waited for SYN retransmissions (after 1 s, then 2 s more, ...) before it was even
    /// queued. Queued clients are cheap (no descriptor until accepted) and, with idle
    /// connections giving way, served within milliseconds. Linux caps it at
    /// `net.core.somaxconn` (4096 by default since 5.4).
    static let backlog = 4096

    let maximum: Int
    /// Names the listener in the log line (`webhook`, `http`).
    let listener: String
    let logger: Logger
    let idle: IdleConnections
    private var open = 0
    private var warned = false

    init(_ maximum: Int, idle: IdleConnections, logger: Logger) {
        self.maximum = maximum
        self.listener = idle.listener
        self.idle = idle
        self.logger = logger
    }

    mutating func connectionOpened() {
        open += 1
        guard open >= maximum else { return }
        // Frees one for the next client now; only when none is idle do clients wait. Called
        // for each connection at or past the limit: Hummingbird checks the limit only between
        // reads of the listening socket, and one read may accept several.
        if !idle.freeSlot(), !warned {
            warned = true
            logger.warning(
                "\(listener): all \(maximum) connection slots are in use, none idle between requests; new connections wait in the listen backlog",
                metadata: ["connections": "\(open)"])
        }
    }

    mutating func connectionClosed() {
        open -= 1
        if open < maximum { idle.slotFreed() }
        if warned, open < maximum / 2 { warned = false }
    }

    func isAcceptingNewConnections() -> Bool { open < maximum }
}
