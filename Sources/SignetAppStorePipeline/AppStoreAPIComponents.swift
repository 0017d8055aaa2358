import Foundation
public import SignetCore
import SignetState

/// Registers the App Store Server API's pipeline components: the `appstore_history` and
/// `appstore_statuses` sources and the `appstore_catch_up` and `appstore_reconcile` stages (keys:
/// ``ComponentSpec/appStoreHistorySource``, ``ComponentSpec/appStoreStatusSource``,
/// ``ComponentSpec/appStoreCatchUpStage``, ``ComponentSpec/appStoreReconcileStage``).
///
/// Nothing is read from the environment and no credential is loaded until a component opens,
/// so `signet lint` and `signet components` work on a machine without the key.
extension ComponentRegistry {
    public mutating func registerAppStoreAPIComponents() {
        registerSource(.appStoreHistorySource) { config, context in
            let now = WallClock.milliseconds()
            for key in ["start", "end"] {
                if let text = try config.optionalString(key), AppStoreHistoryWindow.instant(text, now: now) == nil {
                    throw config.error("'\(config.path).\(key)' must be \(AppStoreHistoryWindow.instantForms), not '\(text)'", key: key)
                }
            }
            let settings = try AppStoreAPISettings(config, env: context.environment)
            let environment = context.environment
            var options = AppStoreHistorySource.Options(
                start: try config.string("start"), end: try config.optionalString("end"),
                checkpointPath: try settings.resolved(config.string("checkpoint"), environment))
            options.onlyFailures = try config.bool("only_failures")
            options.subWindows = try config.int("sub_windows")
            options.parallelism = try config.int("parallelism")
            return AppStoreHistorySource(options: options, logger: context.logger) {
                try settings.makeClient(environment, context: context)
            }
        }
        registerStage(.appStoreCatchUpStage) { config, context in
            let settings = try AppStoreAPISettings(config, env: context.environment)
            var options = AppStoreCatchUpStage.Options()
            options.interval = try config.duration("interval")
            options.window = try config.duration("window")
            options.overlap = try config.duration("overlap")
            options.onlyFailures = try config.bool("only_failures")
            return AppStoreCatchUpStage(options: options, logger: context.logger) {
                try settings.makeClient(context.environment, context: context)
            }
        }
        registerStage(.appStoreReconcileStage) { config, context in
            let settings = try AppStoreAPISettings(config, env: context.environment)
            var options = AppStoreReconcileStage.Options()
            options.interval = try config.duration("interval")
            options.window = try config.duration("window")
            options.leeway = try config.duration("leeway")
            options.limit = try config.int("limit")
            let store = try context.resource(named: config.string("store"), as: StateStoreResource.self)
            return AppStoreReconcileStage(options: options, store: store, logger: context.logger) {
                try settings.makeClient(context.environment, context: context)
            }
        }
        registerSource(.appStoreStatusSource) { config, context in
            let settings = try AppStoreAPISettings(config, env: context.environment)
            let environment = context.environment
            var options = AppStoreStatusSource.Options(
                ids: try config.stringList("original_transaction_ids") ?? [],
                checkpointPath: try settings.resolved(config.string("checkpoint"), environment))
            options.idsFile = try config.optionalString("ids_file")
            guard !options.ids.isEmpty || options.idsFile != nil else {
                throw config.error("'\(config.path)' needs original_transaction_ids or ids_file", key: "ids_file")
            }
            options.parallelism = try config.int("parallelism")
            return AppStoreStatusSource(options: options, logger: context.logger) {
                try settings.makeClient(environment, context: context)
            }
        }
    }
}
