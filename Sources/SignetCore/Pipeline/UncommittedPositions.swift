/// Thrown by ``Source/close()`` when records the pipeline finished could not be committed
/// to the source (a Kafka rebalance that never settled, a coordinator that stayed away):
/// nothing is lost, but whoever reads next reads them again.
///
/// The runner closes everything else first and then throws it, so a stop that leaves work
/// to redo does not look clean (`signet run` exits 1 and lists the positions in
/// `--summary-json`).
public struct UncommittedPositions: Error, Sendable, CustomStringConvertible {
    /// Per stream (a Kafka `topic[partition]`), the position that should have been
    /// committed (for Kafka: the next offset to read).
    public var positions: [String: Int64]
    /// Why they could not be committed (the last error).
    public var reason: String

    /// The positions left uncommitted and why.
    public init(positions: [String: Int64], reason: String) {
        self.positions = positions
        self.reason = reason
    }

    public var description: String {
        let list = positions.sorted { $0.key < $1.key }.map { "\($0.key) at \($0.value)" }.joined(separator: ", ")
        return "finished records were not committed (\(list)): \(reason); they will be read again"
    }
}
