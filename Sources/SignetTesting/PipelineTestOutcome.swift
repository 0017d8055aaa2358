/// How one test case went: passed, or the differences found.
public struct PipelineTestOutcome: Sendable {
    public var name: String
    /// Each line one difference between what was expected and what came out; empty when it passed.
    public var failures: [String]

    public var passed: Bool { failures.isEmpty }

    // Not public: outcomes come from PipelineTestRunner, not from an embedder.
    init(name: String, failures: [String]) {
        self.name = name
        self.failures = failures
    }
}
