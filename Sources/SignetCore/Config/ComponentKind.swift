/// What a registered ``ComponentSpec`` describes, and where it goes in a pipeline file.
public enum ComponentKind: String, Sendable, CaseIterable, Codable {
    /// `source:` (one per pipeline).
    case source
    /// An entry of `stages:`.
    case stage
    /// An entry of `sinks:`, or `dead_letter:`.
    case sink
    /// An entry of `stores:`: a named resource stages share (``PipelineResource``).
    case store
    /// A top-level section without `type:` (e.g. `settings:`).
    case section

    /// The plural used in listings and docs.
    public var plural: String {
        switch self {
        case .source: "sources"
        case .stage: "stages"
        case .sink: "sinks"
        case .store: "stores"
        case .section: "sections"
        }
    }
}
