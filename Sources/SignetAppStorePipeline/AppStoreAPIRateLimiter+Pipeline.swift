public import Logging
public import SignetAppStoreAPI
public import SignetCore
import SignetState

extension AppStoreAPIRateLimiter {
    /// The limiter for the App Store API clients of a pipeline: one whose budgets live in the
    /// first of `resources` that is a state store able to keep them (PostgreSQL: every
    /// instance on that database spends one budget per app, environment and endpoint; SQLite:
    /// the process's own, kept on disk), else the process-wide `shared` one. Either store
    /// keeps Apple's pauses (a 429's Retry-After), so a restart during one waits it out. Call
    /// it when the component opens: stores are open by then.
    public static func forPipeline(_ resources: [any PipelineResource], logger: Logger) -> AppStoreAPIRateLimiter {
        for case let store as StateStoreResource in resources {
            guard let opened = try? store.roles(), let budget = opened as? any SharedRateBudget else { continue }
            // A read-only SQLite store cannot book: this process spends its own budget.
            if let sqlite = opened as? SQLiteStateStore, sqlite.options.readOnly { continue }
            logger.info("App Store Server API budgets and Apple's pauses kept in \(budget.budgetDescription)")
            return AppStoreAPIRateLimiter(sharedBudget: budget, logger: logger)
        }
        return .shared
    }
}
