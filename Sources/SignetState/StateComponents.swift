import SignetCore

/// Registers the stages of SignetState: `dedupe`, `transition`, `fanout`.
extension ComponentRegistry {
    public mutating func registerStateComponents() {
        registerStage("dedupe", summary: "drops Apple's retries (key: notificationUUID by default; durable store)") { config, _ in
            var options = DedupeStage.Options()
            options.key = try Self.dedupeKey(config)
            options.retention = try config.duration("retention", default: options.retention)
            let store = try StateStoreConfiguration.parse(config)
            try config.finish()
            return DedupeStage(configuration: store, options: options)
        }
        registerStage("transition", summary: "per-purchase state machine; entitlement events through a transactional outbox") { config, _ in
            var options = TransitionStage.Options()
            options.dedupeKey = try Self.dedupeKey(config)
            options.retention = try config.duration("retention", default: options.retention)
            if let policy = try config.object("policy") {
                options.policy = try Self.policy(policy)
            }
            options.expirySweep = try config.duration("expiry_sweep", default: options.expirySweep)
            options.expiryLeeway = try config.duration("expiry_leeway", default: options.expiryLeeway)
            if let durations = try config.object("non_renewing_durations") {
                for (product, _) in durations.entries() {
                    if let duration = try durations.optionalDuration(product) { options.policy.nonRenewingDurations.set(product, duration) }
                }
                try durations.finish()
            }
            let store = try StateStoreConfiguration.parse(config)
            try config.finish()
            return TransitionStage(configuration: store, options: options)
        }
        registerStage("fanout", summary: "routes entitlement events to sinks by event type, environment and product") { config, context in
            var routes: [FanoutRoute] = []
            for node in try config.list("routes") ?? [] {
                let route = try ConfigObject(node)
                guard let sinks = try route.stringList("sinks"), !sinks.isEmpty else {
                    throw ConfigError("\(node.path.isEmpty ? "a route" : "'\(node.path)'") needs 'sinks'", at: route.location)
                }
                try Self.checkSinks(sinks, key: "sinks", in: route, context: context)
                var types: Set<String>?, environments: Set<String>?, products: [String]?
                if let when = try route.object("when") {
                    if let list = try when.stringList("type") {
                        let known = EntitlementEventType.allCases.map(\.rawValue)
                        for type in list where !known.contains(type) {
                            throw when.error(
                                "'\(type)' is not an event type; expected one of: \(known.joined(separator: ", "))"
                                    + ConfigObject.suggestion(for: type, among: known), key: "type")
                        }
                        types = Set(list)
                    }
                    environments = try when.stringList("environment").map(Set.init)
                    products = try when.stringList("product")
                    try when.finish()
                }
                try route.finish()
                routes.append(FanoutRoute(sinks: sinks, types: types, environments: environments, products: products))
            }
            let defaultSinks = try config.stringList("default_sinks") ?? []
            try Self.checkSinks(defaultSinks, key: "default_sinks", in: config, context: context)
            try config.finish()
            return FanoutStage(routes: routes, defaultSinks: defaultSinks)
        }
    }

    private static func dedupeKey(_ config: ConfigObject) throws(ConfigError) -> DedupeKeyKind {
        let allowed = DedupeKeyKind.allCases.map(\.rawValue)
        return DedupeKeyKind(rawValue: try config.choice("key", allowed, default: DedupeKeyKind.notificationUUID.rawValue))
            ?? .notificationUUID
    }

    private static func policy(_ config: ConfigObject) throws(ConfigError) -> TransitionPolicy {
        var policy = TransitionPolicy()
        policy.billingRetryEntitled = try config.bool("billing_retry_entitled", default: policy.billingRetryEntitled)
        policy.gracePeriodEntitled = try config.bool("grace_period_entitled", default: policy.gracePeriodEntitled)
        policy.familySharedEntitled = try config.bool("family_shared_entitled", default: policy.familySharedEntitled)
        policy.entitleOnAppTransaction = try config.bool("entitle_on_app_transaction", default: policy.entitleOnAppTransaction)
        policy.rejectUnknownTypes = try config.bool("reject_unknown_types", default: policy.rejectUnknownTypes)
        try config.finish()
        return policy
    }

    private static func checkSinks(_ sinks: [String], key: String, in config: ConfigObject, context: ComponentContext) throws(ConfigError) {
        for sink in sinks where !context.sinkNames.contains(sink) {
            let known = context.sinkNames.isEmpty ? "none" : context.sinkNames.joined(separator: ", ")
            throw config.error(
                "unknown sink '\(sink)' (the pipeline's sinks: \(known))" + ConfigObject.suggestion(for: sink, among: context.sinkNames),
                key: key)
        }
    }
}
