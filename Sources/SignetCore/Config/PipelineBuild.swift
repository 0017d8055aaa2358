/// One pass of ``PipelineLoader`` over a parsed file: validates every part against its
/// spec, builds resources, source, stages and sinks, and collects every error on the way.
struct PipelineBuild {
    let loader: PipelineLoader
    let root: ConfigNode
    private var registry: ComponentRegistry { loader.registry }
    private var errors: [ConfigError] = []
    /// What the components built may reject with (their specs' ``ComponentSpec/rejects``).
    private var reasonCodes: Set<ReasonCode> = []
    private var resources: [NamedResource] = []
    private var resourceLocations: [String: ConfigLocation] = [:]
    /// The stores the file declares, in file order.
    private var declaredStores: [(name: String, node: ConfigNode)] = []
    private var sinkNames: [String] = []

    /// The implicit store every `.storeName` field defaults to.
    static let defaultStoreName = "default"

    init(loader: PipelineLoader, root: ConfigNode) {
        self.loader = loader
        self.root = root
    }

    mutating func run() throws(ConfigErrors) -> Pipeline {
        let top: PipelineFileSpec.TopLevel
        do {
            top = try PipelineFileSpec.TopLevel(root)
        } catch {
            throw ConfigErrors([error])
        }

        // Sections (settings: and registered ones).
        var sections: [String: ParsedConfig] = [:]
        for (name, spec) in registry.sections {
            let node = top.node(name) ?? ConfigNode(value: .null, location: root.location, path: name)
            var validator = ConfigValidator(storeNames: [])
            let parsed = validator.validate(node, fields: spec.fields, retiredKeys: spec.retiredKeys)
            let wanted = top.node(name) != nil || name == PipelineSettings.spec.name
            // A section not written has nothing wrong with it, even if it has required keys.
            guard wanted else { continue }
            errors += validator.errors
            if validator.errors.isEmpty { sections[name] = parsed }
        }
        var settings = PipelineSettings()
        if let parsed = sections.removeValue(forKey: PipelineSettings.spec.name) {
            settings = attempt { try PipelineSettings(parsed) } ?? settings
        }

        // Stores are declared first so stages can name them, built in file order.
        if let stores = attempt({ try top.entries("stores") }) ?? nil {
            declaredStores = stores
        }
        for (name, node) in declaredStores {
            buildStore(name: name, node: node)
        }

        let sinkEntries = attempt { try top.entries("sinks") } ?? nil
        sinkNames = sinkEntries?.map(\.name) ?? []

        var source: (any Source)?
        if let node = top.node("source") {
            source = build(node, kind: .source, path: "source", table: registry.sources)?.component
        } else {
            errors.append(top.missing("source"))
        }

        var stages: [any Stage] = []
        var stageLocations: [ConfigLocation] = []
        var stageTypes: [(spec: ComponentSpec, location: ConfigLocation, path: String)] = []
        if let items = attempt({ try top.list("stages") }) ?? nil {
            // Every stage is validated before any is built, so each factory learns what the
            // whole list declares (`verify` whether a later stage replaces its outputs).
            let specs = items.map { typeName(of: $0).flatMap { registry.stages[$0]?.spec } }
            let validated = items.enumerated().map { index, item in
                validate(item, kind: .stage, path: "stages[\(index)]", table: registry.stages)
            }
            let facts = zip(specs, validated).map { spec, validated in
                ComponentContext.StageFacts(traits: spec?.traits ?? [], stores: Set(validated?.stores ?? []))
            }
            for (index, item) in items.enumerated() {
                if let validated = validated[index], let stage = construct(validated, stages: facts, stageIndex: index) {
                    stages.append(stage)
                    stageLocations.append(item.location)
                }
                if let spec = specs[index] { stageTypes.append((spec, item.location, "stages[\(index)]")) }
            }
            // With a stage of unknown type the order cannot be judged (it may be the one missing).
            if stageTypes.count == items.count { checkOrder(stageTypes) }
        }

        var sinks: [NamedSink] = []
        if let sinkEntries {
            for (name, node) in sinkEntries {
                if let built = build(node, kind: .sink, path: "sinks.\(name)", name: name, table: registry.sinks) {
                    sinks.append(NamedSink(name: name, sink: built.component))
                }
            }
            if sinkNames.isEmpty { errors.append(top.error("'sinks' needs at least one sink", key: "sinks")) }
        } else if top.node("sinks") == nil {
            // Absent, or present with no value (`sinks:`): either way nothing would be delivered.
            errors.append(top.contains("sinks") ? top.error("'sinks' needs at least one sink", key: "sinks") : top.missing("sinks"))
        }

        var deadLetter: DeadLetterOutput?
        if let node = top.node("dead_letter") {
            if let built = build(
                node, kind: .sink, path: "dead_letter", name: "dead_letter", table: registry.sinks,
                extraFields: DeadLetterOutput.fields)
            {
                deadLetter = attempt {
                    var output = try DeadLetterOutput.configuration.options(built.config)
                    output.sink = built.component
                    return output
                }
            }
        } else {
            let hint = PipelineFileSpec.pipeline["dead_letter"]?.missingHint.map { " " + $0 } ?? ""
            errors.append(ConfigError("the pipeline needs 'dead_letter'\(hint)", at: root.location))
        }

        checkIdentities()
        let known = PipelineFileSpec.pipeline.names + registry.sections.keys.sorted() + ComponentRegistry.builtInKeys
        if let unknown = top.unknownKey(known: known) { errors.append(unknown) }
        guard errors.isEmpty, let source, let deadLetter else {
            throw ConfigErrors(PipelineLoader.sorted(errors))
        }
        let pipeline: Pipeline
        do {
            pipeline = try Pipeline(
                source: source, stages: stages, sinks: sinks, deadLetter: deadLetter, settings: settings,
                resources: resources, sections: sections, reasonCodes: reasonCodes)
        } catch {
            // A registered factory built a stage its neighbours do not serve (the built-in ones
            // ask their context); said at the stage, like every other error of the file.
            throw ConfigErrors([ConfigError("'stages[\(error.index)]' (\(error.stage)): \(error.message)", at: stageLocations[error.index])])
        }
        var failed: [ConfigError] = []
        for check in registry.pipelineChecks {
            do {
                try check(pipeline)
            } catch let error as ConfigError {
                failed.append(error)
            } catch {
                failed.append(ConfigError("\(error)", at: root.location))
            }
        }
        guard failed.isEmpty else { throw ConfigErrors(PipelineLoader.sorted(failed)) }
        return pipeline
    }

    // MARK: - Components

    private func typeName(of node: ConfigNode) -> String? {
        guard case .mapping(let pairs) = node.value,
            let pair = pairs.first(where: { if case .scalar("type") = $0.key.value { true } else { false } }),
            case .scalar(let type) = pair.value.value
        else { return nil }
        return type
    }

    /// A component whose mapping passed its spec, ready for its factory.
    private struct Validated<Component> {
        var factory: @Sendable (ParsedConfig, ComponentContext) throws -> Component
        var config: ParsedConfig
        var node: ConfigNode
        var kind: ComponentKind
        var type: String
        var path: String
        var name: String?
        var reserved: Set<String>
        /// The stores its `.storeName` fields name.
        var stores: [String]
    }

    /// Validates and builds one component; nil (errors recorded) when it cannot be built.
    private mutating func build<Component>(
        _ node: ConfigNode, kind: ComponentKind, path: String, name: String? = nil,
        table: [String: ComponentRegistry.Entry<@Sendable (ParsedConfig, ComponentContext) throws -> Component>],
        extraFields: [ConfigField] = []
    ) -> (component: Component, config: ParsedConfig)? {
        guard let validated = validate(node, kind: kind, path: path, name: name, table: table, extraFields: extraFields),
            let component = construct(validated)
        else { return nil }
        return (component, validated.config)
    }

    /// Checks one component's mapping against its spec and builds the stores it names;
    /// nil (errors recorded) when its factory must not run.
    private mutating func validate<Component>(
        _ node: ConfigNode, kind: ComponentKind, path: String, name: String? = nil,
        table: [String: ComponentRegistry.Entry<@Sendable (ParsedConfig, ComponentContext) throws -> Component>],
        extraFields: [ConfigField] = []
    ) -> Validated<Component>? {
        let known = table.keys.sorted()
        guard case .mapping(let pairs) = node.value else {
            errors.append(ConfigError("'\(path)' must be a mapping, not \(node.kindDescription)", at: node.location))
            return nil
        }
        guard let typePair = pairs.first(where: { if case .scalar("type") = $0.key.value { true } else { false } }) else {
            errors.append(ConfigError("'\(path)' needs 'type' (one of: \(known.joined(separator: ", ")))", at: node.location))
            return nil
        }
        guard case .scalar(let type) = typePair.value.value else {
            errors.append(ConfigError("'\(path).type' must be a string", at: typePair.value.location))
            return nil
        }
        guard let entry = table[type] else {
            errors.append(ConfigError(
                "unknown \(kind.rawValue) type '\(type)'; known: \(known.joined(separator: ", "))"
                    + ConfigWording.suggestion(for: type, among: known), at: typePair.value.location))
            return nil
        }
        reasonCodes.formUnion(entry.spec.rejects)
        let reserved: Set<String> = Set(["type"] + extraFields.map(\.name))
        var validator = ConfigValidator(storeNames: availableStoreNames)
        let config: ParsedConfig
        if entry.spec.acceptsAnyKeys {
            config = validator.validate(node, fields: extraFields, reserved: ["type"], allowsUnknownKeys: true)
        } else {
            config = validator.validate(
                node, fields: entry.spec.fields + extraFields, reserved: ["type"], retiredKeys: entry.spec.retiredKeys)
        }
        errors += validator.errors
        guard validator.errors.isEmpty else { return nil }
        for reference in validator.storeReferences where resourceLocations[reference.name] == nil {
            buildImplicitStore(named: reference.name, for: reference.location)
        }
        // A store that failed to build is reported already; its users would only repeat it.
        let built = Set(resources.map(\.name))
        guard validator.storeReferences.allSatisfy({ built.contains($0.name) }) else { return nil }
        return Validated(
            factory: entry.factory, config: config, node: node, kind: kind, type: type, path: path, name: name,
            reserved: reserved, stores: validator.storeReferences.map(\.name))
    }

    /// Runs a validated component's factory; nil (errors recorded) when it throws. A stage
    /// learns the pipeline's `stages` and its index among them.
    private mutating func construct<Component>(
        _ validated: Validated<Component>, stages: [ComponentContext.StageFacts] = [], stageIndex: Int? = nil
    ) -> Component? {
        var context = ComponentContext(
            path: validated.path, name: validated.name, sinkNames: sinkNames, logger: loader.logger,
            resources: Dictionary(resources.map { ($0.name, $0.resource) }, uniquingKeysWith: { first, _ in first }),
            location: validated.node.location, reservedKeys: validated.reserved, environment: loader.environment)
        context.stages = stages
        context.stageIndex = stageIndex
        do {
            return try validated.factory(validated.config, context)
        } catch let error as ConfigError {
            errors.append(error)
        } catch let error as ConfigErrors {
            errors += error.errors
        } catch {
            // A factory failed for a reason of its own (a certificate file that does not parse, ...).
            errors.append(ConfigError("\(validated.kind.rawValue) '\(validated.type)': \(error)", at: validated.node.location))
        }
        return nil
    }

    // MARK: - Stores

    private var availableStoreNames: [String] {
        var names = declaredStores.map(\.name)
        if registry.defaultStoreType != nil, !names.contains(Self.defaultStoreName) { names.append(Self.defaultStoreName) }
        return names
    }

    private mutating func buildStore(name: String, node: ConfigNode) {
        let path = "stores.\(name)"
        guard let type = typeName(of: node), let entry = registry.stores[type] else {
            // Let the generic path report the missing or unknown type.
            _ = build(node, kind: .store, path: path, name: name, table: registry.stores)
            return
        }
        if loader.substitutesTestStores, let substitute = entry.spec.testSubstitute, registry.stores[substitute] != nil {
            let stand = ConfigNode(
                value: .mapping([(ConfigNode(value: .scalar("type"), location: node.location, path: path),
                                  ConfigNode(value: .scalar(substitute), location: node.location, path: "\(path).type"))]),
                location: node.location, path: path)
            // The real options are still checked, then the stand-in is built.
            var validator = ConfigValidator(storeNames: [])
            _ = validator.validate(node, fields: entry.spec.fields, reserved: ["type"], retiredKeys: entry.spec.retiredKeys)
            errors += validator.errors
            add(name: name, type: substitute, built: build(stand, kind: .store, path: path, name: name, table: registry.stores)?.component, at: node.location)
            return
        }
        add(name: name, type: type, built: build(node, kind: .store, path: path, name: name, table: registry.stores)?.component, at: node.location)
    }

    private mutating func buildImplicitStore(named name: String, for location: ConfigLocation) {
        guard name == Self.defaultStoreName, let type = registry.defaultStoreType else { return }
        let node = ConfigNode(
            value: .mapping([(ConfigNode(value: .scalar("type"), location: location, path: "stores.\(name)"),
                              ConfigNode(value: .scalar(type), location: location, path: "stores.\(name).type"))]),
            location: location, path: "stores.\(name)")
        buildStore(name: name, node: node)
    }

    private mutating func add(name: String, type: String, built: (any PipelineResource)?, at location: ConfigLocation) {
        resourceLocations[name] = location
        guard let built else { return }
        resources.append(NamedResource(name: name, type: type, resource: built))
    }

    /// Two stores opening the same database would each cache and lock it on their own.
    private mutating func checkIdentities() {
        var seen: [String: String] = [:]
        for named in resources {
            guard let identity = named.resource.identity else { continue }
            if let first = seen[identity] {
                errors.append(ConfigError(
                    "stores '\(first)' and '\(named.name)' both open \(identity); declare it once under 'stores:' "
                        + "and name that store from every stage that uses it", at: resourceLocations[named.name]))
            } else {
                seen[identity] = named.name
            }
        }
    }

    // MARK: - Stage order

    private mutating func checkOrder(_ stages: [(spec: ComponentSpec, location: ConfigLocation, path: String)]) {
        for (index, stage) in stages.enumerated() {
            for required in stage.spec.requiresBefore where !stages[..<index].contains(where: { $0.spec.name == required }) {
                if let later = stages[(index + 1)...].first(where: { $0.spec.name == required }) {
                    errors.append(ConfigError(
                        "stage '\(stage.spec.name)' must come after '\(required)' (\(later.path)): it uses what '\(required)' adds",
                        at: stage.location))
                } else {
                    errors.append(ConfigError(
                        "stage '\(stage.spec.name)' needs a '\(required)' stage before it", at: stage.location))
                }
            }
        }
    }

    // MARK: - Errors

    private mutating func attempt<T>(_ body: () throws -> T) -> T? {
        do {
            return try body()
        } catch let error as ConfigError {
            errors.append(error)
        } catch let error as ConfigErrors {
            errors += error.errors
        } catch {
            errors.append(ConfigError("\(error)", at: nil))
        }
        return nil
    }
}
