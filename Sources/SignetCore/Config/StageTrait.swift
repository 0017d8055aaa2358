/// A fact a stage type declares about what it does (``ComponentSpec/traits``).
///
/// The loader reads the traits of every stage in `stages:` before it builds any, and
/// each factory asks its ``ComponentContext`` what the rest of the pipeline declares
/// (``ComponentContext/laterStage(declares:)``,
/// ``ComponentContext/otherStage(declares:usingStore:)``). A stage that does less
/// because of another one is thus built that way where the pipeline is built, from the
/// whole stage list, instead of being rewritten or flagged once it runs.
public struct StageTrait: Hashable, Sendable {
    /// The trait's name, for messages and tests.
    public var name: String

    /// A trait called `name` (`snake_case`).
    public init(_ name: String) {
        self.name = name
    }

    /// Every record leaves the stage with outputs the stage set itself, or with none: what
    /// earlier stages put in `outputs` is never published, so they need not build it
    /// (`transition` publishes events; `verify` before it skips its decoded document).
    public static let replacesOutputs = StageTrait("replaces_outputs")
}
