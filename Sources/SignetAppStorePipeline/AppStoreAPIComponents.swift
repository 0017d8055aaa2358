import Foundation
public import SignetCore
import SignetAppStoreAPI
import SignetState

/// Registers the App Store Server API's pipeline components: the `appstore_history` and
/// `appstore_statuses` sources and the `appstore_catch_up`, `appstore_reconcile`, `appstore_consumption` and
/// `appstore_delivery_health` stages (keys:
/// `ComponentSpec/appStoreHistorySource`, `ComponentSpec/appStoreStatusSource`,
/// `ComponentSpec/appStoreCatchUpStage`, `ComponentSpec/appStoreReconcileStage`).
///
/// Nothing is read from the environment and no credential is loaded until a component opens,
/// so `signet lint` and `signet components` work on a machine without the key.
extension ComponentRegistry {
    public mutating func registerAppStoreAPIComponents() {
        // Served by the webhook's listener (SignetHTTP attaches it when the pipeline runs).
        registerSection(.retentionSection)
        registerSource(.appStoreHistorySource) { config, context in
            let now = WallClock.milliseconds()
            for key in ["start", "end"] {
                if let text = try config.optionalString(key), AppStoreHistoryWindow.instant(text, now: now) == nil {
                    throw config.error("'\(config.path).\(key)' must be \(AppStoreHistoryWindow.instantForms), not '\(text)'", key: key)
                }
            }
            let settings = try AppStoreAPISettings(config, env: context.environment)
            let environment = context.environment
            var options = try AppStoreHistorySource.Options.configuration.options(config)
            options.start = try config.string("start")
            options.checkpointPath = try settings.resolved(config.string("checkpoint"), environment)
            return AppStoreHistorySource(options: options, logger: context.logger) {
                try settings.makeClient(environment, context: context)
            }
        }
        registerStage(.appStoreCatchUpStage) { config, context in
            let settings = try AppStoreAPISettings(config, env: context.environment)
            let options = try AppStoreCatchUpStage.Options.configuration.options(config)
            return AppStoreCatchUpStage(options: options, logger: context.logger) {
                try settings.makeClient(context.environment, context: context)
            }
        }
        registerStage(.appStoreReconcileStage) { config, context in
            let settings = try AppStoreAPISettings(config, env: context.environment)
            let options = try AppStoreReconcileStage.Options.configuration.options(config)
            let store = try context.resource(named: config.string("store"), as: StateStoreResource.self)
            return AppStoreReconcileStage(options: options, store: store, logger: context.logger) {
                try settings.makeClient(context.environment, context: context)
            }
        }
        registerStage(.appStoreConsumptionStage) { config, context in
            let settings = try AppStoreAPISettings(config, env: context.environment)
            var options = try AppStoreConsumptionStage.Options.configuration.options(config)
            for (key, path) in [
                ("refund_preference_by_reason", \ConsumptionPolicy.refundPreferenceByReason),
                ("refund_preference_by_product", \ConsumptionPolicy.refundPreferenceByProduct),
                ("refund_preference_by_entitlement", \ConsumptionPolicy.refundPreferenceByEntitlement),
            ] {
                for entry in try config.map(key) {
                    guard case .string(let value) = entry.value else { continue }
                    options.responder.policy[keyPath: path][entry.name] = .some(ConsumptionInformation.RefundPreference(rawValue: value))
                }
            }
            for (key, path) in [
                ("sample_content_provided_by_product", \ConsumptionPolicy.sampleContentProvidedByProduct),
                ("sample_content_provided_by_entitlement", \ConsumptionPolicy.sampleContentProvidedByEntitlement),
            ] {
                for entry in try config.map(key) {
                    guard case .bool(let value) = entry.value else { continue }
                    options.responder.policy[keyPath: path][entry.name] = value
                }
            }
            let store = try context.resource(named: config.string("store"), as: StateStoreResource.self)
            return AppStoreConsumptionStage(options: options, store: store, logger: context.logger) {
                try settings.makeClient(context.environment, context: context)
            }
        }
        registerStage(.appStoreDeliveryHealthStage) { config, context in
            let settings = try AppStoreAPISettings(config, env: context.environment)
            let options = try AppStoreDeliveryHealthStage.Options.configuration.options(config)
            let store = try config.optionalString("store").map { try context.resource(named: $0, as: StateStoreResource.self) }
            return AppStoreDeliveryHealthStage(options: options, store: store, environment: context.environment, logger: context.logger) {
                try settings.makeClient(context.environment, context: context)
            }
        }
        registerSource(.appStoreStatusSource) { config, context in
            let settings = try AppStoreAPISettings(config, env: context.environment)
            let environment = context.environment
            var options = try AppStoreStatusSource.Options.configuration.options(config)
            options.ids = try config.stringList("original_transaction_ids") ?? []
            options.checkpointPath = try settings.resolved(config.string("checkpoint"), environment)
            guard !options.ids.isEmpty || options.idsFile != nil else {
                throw config.error("'\(config.path)' needs original_transaction_ids or ids_file", key: "ids_file")
            }
            return AppStoreStatusSource(options: options, logger: context.logger) {
                try settings.makeClient(environment, context: context)
            }
        }
    }
}
