public import SignetCore

/// Registers what SignetState brings: the stores `sqlite` and `memory` (the implicit
/// store `default` is an sqlite one), and the stages `dedupe`, `transition`, `fanout`.
/// Keys: `ComponentSpec/sqliteStore`, `ComponentSpec/memoryStore`,
/// `ComponentSpec/dedupeStage`, `ComponentSpec/transitionStage`, `ComponentSpec/fanoutStage`.
extension ComponentRegistry {
    /// Registers the state components: the `sqlite` and `memory` stores and the `dedupe`, `transition` and `fanout` stages.
    public mutating func registerStateComponents() {
        registerStore(.sqliteStore) { config, _ in
            let options = try SQLiteStateStore.Options.configuration.options(config)
            return StateStoreResource(.sqlite(path: try config.string("path"), options: options), entitlementNames: try EntitlementNames(config))
        }
        registerStore(.memoryStore) { config, _ in
            StateStoreResource(
                .memory(try InMemoryStateStore.Options.configuration.options(config)),
                entitlementNames: try EntitlementNames(config))
        }
        defaultStoreType = ComponentSpec.sqliteStore.name

        registerStage(.dedupeStage) { config, context in
            var options = try DedupeStage.Options.configuration.options(config)
            let storeName = try config.string("store")
            options.keysCheckedByTransition = context.otherStage(declares: .checksDedupeKeys, usingStore: storeName)
            return DedupeStage(resource: try context.resource(named: storeName, as: StateStoreResource.self), options: options)
        }
        registerStage(.transitionStage) { config, context in
            var options = try TransitionStage.Options.configuration.options(config)
            if let policy = try config.object("policy") {
                options.policy = try TransitionPolicy.configuration.options(policy)
            }
            try TransitionStage.Options.expiryConfiguration.apply(config, to: &options)
            for entry in try config.map("non_renewing_durations") {
                guard case .duration(let duration) = entry.value else { continue }
                options.policy.nonRenewingDurations.set(entry.name, duration)
            }
            let store = try context.resource(named: config.string("store"), as: StateStoreResource.self)
            return TransitionStage(resource: store, options: options)
        }
        registerStage(.fanoutStage) { config, context in
            var routes: [FanoutRoute] = []
            for route in try config.objectList("routes") {
                let sinks = try route.stringList("sinks") ?? []
                guard !sinks.isEmpty else { throw route.error("'\(route.path)' needs at least one sink", key: "sinks") }
                try Self.checkSinks(sinks, key: "sinks", in: route, context: context)
                let when = try route.object("when")
                routes.append(FanoutRoute(
                    sinks: sinks, types: try when?.stringList("type").map(Set.init),
                    environments: try when?.stringList("environment").map(Set.init), products: try when?.stringList("product")))
            }
            let defaultSinks = try config.stringList("default_sinks") ?? []
            try Self.checkSinks(defaultSinks, key: "default_sinks", in: config, context: context)
            return FanoutStage(routes: routes, defaultSinks: defaultSinks)
        }
    }

    private static func checkSinks(_ sinks: [String], key: String, in config: ParsedConfig, context: ComponentContext) throws(ConfigError) {
        for sink in sinks where !context.sinkNames.contains(sink) {
            let known = context.sinkNames.isEmpty ? "none" : context.sinkNames.joined(separator: ", ")
            throw config.error(
                "unknown sink '\(sink)' (the pipeline's sinks: \(known))" + ConfigWording.suggestion(for: sink, among: context.sinkNames),
                key: key)
        }
    }
}

/// `key` reads it by its raw value (here, where SignetCore is imported publicly, as a public
/// type's conformance needs).
extension DedupeKeyKind: ConfigBindable {}
