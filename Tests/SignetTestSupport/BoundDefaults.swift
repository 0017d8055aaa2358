public import SignetCore

/// Where `spec` and the options type its bindings fill disagree: a bound key missing from
/// the spec, a spec default other than the options' value, or a default that does not read
/// back as that value (the invariant that keeps a key's default written once).
///
/// `mapping` is the smallest mapping the spec accepts (its required keys).
public func boundDefaultMismatches<Options>(
    _ configuration: ConfigBindings<Options>, in spec: ComponentSpec, mapping: String = "{}"
) throws -> [String] {
    let parsed = try spec.parse(ConfigNode.parse(yaml: mapping, file: "defaults.yaml", environment: [:]))
    var mismatches: [String] = []
    // Options filled from the spec's defaults, as the loader would for a mapping that writes none.
    var fromDefaults = configuration.defaults
    for binding in configuration.bindings {
        let expected = binding.field(defaults: configuration.defaults).requirement
        guard let field = spec.field(binding.name) else {
            mismatches.append("\(spec.name).\(binding.name): bound but not in the spec")
            continue
        }
        try binding.apply(parsed, to: &fromDefaults)
        if field.requirement != expected {
            mismatches.append("\(spec.name).\(binding.name): the spec says \(field.requirement), the options \(expected)")
        }
        let readBack = binding.configText(of: fromDefaults), original = binding.configText(of: configuration.defaults)
        if readBack != original {
            mismatches.append("\(spec.name).\(binding.name): the default \(original ?? "nil") reads back as \(readBack ?? "nil")")
        }
    }
    return mismatches
}
