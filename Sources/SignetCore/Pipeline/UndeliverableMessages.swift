/// Thrown by a sink that delivered every message of a write except some that the
/// destination refused for good (an HTTP 400, say): retrying would fail the same way.
///
/// The runner does not retry such a write; it sends the records behind the refused
/// messages to the dead-letter sink with the given reasons, then commits the batch.
/// Any other error means nothing may be considered delivered (the write is retried).
public struct UndeliverableMessages: Error, Sendable, CustomStringConvertible {
    /// One refused message: its index in the written array, and why.
    public struct Refusal: Sendable, Equatable {
        /// The refused message's index in the batch written.
        public var index: Int
        /// Why it was refused (a reason code and detail).
        public var rejection: RecordRejection
        /// A refusal of the message at `index`.
        public init(index: Int, rejection: RecordRejection) {
            self.index = index
            self.rejection = rejection
        }
    }

    /// The refused messages, by index.
    public var refusals: [Refusal]

    /// An error for the messages `refusals` names.
    public init(_ refusals: [Refusal]) {
        self.refusals = refusals
    }

    public var description: String {
        "\(refusals.count) messages refused for good" + (refusals.first.map { " (first: \($0.rejection))" } ?? "")
    }
}
