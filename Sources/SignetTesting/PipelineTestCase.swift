public import SignetCore
/// One test of a pipeline: inputs, extra environment, and what must come out.
public struct PipelineTestCase: Sendable {
    public var name: String
    /// Input lines in order (from `input_files`, then `input_lines`).
    public var inputs: [[UInt8]]
    /// Variables for this case on top of the file's `environment:`.
    public var environment: [String: String]
    public var expectation: PipelineTestExpectation
    /// Where the case is written, for messages.
    public var location: ConfigLocation

    public init(
        name: String, inputs: [[UInt8]], environment: [String: String] = [:], expectation: PipelineTestExpectation,
        location: ConfigLocation
    ) {
        self.name = name
        self.inputs = inputs
        self.environment = environment
        self.expectation = expectation
        self.location = location
    }
}
