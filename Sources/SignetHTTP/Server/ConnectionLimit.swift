import Hummingbird
import HummingbirdCore
import Logging

/// A listener's connection budget: at most `maximum` open connections, more wait in the
/// listen backlog (the server stops accepting, so no descriptor is spent on them).
///
/// Each listener has its own, so idle connections to the admin listener cannot use up the
/// descriptors the webhook needs to answer Apple. Reaching the limit is logged once, with
/// the count, and again only after the connections fell below half of it.
struct ConnectionLimit: AvailableConnectionsDelegate {
    let maximum: Int
    /// Names the listener in the log line (`webhook`, `http`).
    let listener: String
    let logger: Logger
    private var open = 0
    private var warned = false

    init(_ maximum: Int, listener: String, logger: Logger) {
        self.maximum = maximum
        self.listener = listener
        self.logger = logger
    }

    mutating func connectionOpened() {
        open += 1
        if open >= maximum, !warned {
            warned = true
            logger.warning(
                "\(listener): all \(maximum) connection slots are in use; new connections wait in the listen backlog",
                metadata: ["connections": "\(open)"])
        }
    }

    mutating func connectionClosed() {
        open -= 1
        if warned, open < maximum / 2 { warned = false }
    }

    func isAcceptingNewConnections() -> Bool { open < maximum }
}
