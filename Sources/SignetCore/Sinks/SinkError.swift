import Foundation

/// A sink could not deliver.
public struct SinkError: Error, CustomStringConvertible {
    public var description: String
    /// The failure cannot go away by retrying (the reader of stdout is gone), so the runner
    /// stops at once instead of retrying until the sink retry timeout.
    public var isPermanent: Bool

    /// A failure described by `description`; `isPermanent` when retrying cannot help.
    public init(_ description: String, isPermanent: Bool = false) {
        self.description = description
        self.isPermanent = isPermanent
    }

    /// A failed write(2) to `destination`, in one line a user can act on.
    init(writing destination: String, errno code: Int32) {
        switch code {
        case EPIPE, EBADF:
            self.init("\(destination) is closed (\(String(cString: strerror(code)))): stopped; nothing past the delivered output is committed", isPermanent: true)
        case ENOSPC:
            self.init("no space left on device writing \(destination)")
        default:
            self.init("write to \(destination) failed: \(String(cString: strerror(code)))")
        }
    }
}
