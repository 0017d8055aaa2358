public import Logging
public import SignetAppStoreAPI
public import SignetCore
import SignetState

extension AppStoreAPIRateLimiter {
    /// The limiter for the App Store API clients of a pipeline: one whose budgets are shared
    /// through the first of `resources` that is a state store able to share them (PostgreSQL:
    /// every instance on that database spends one budget per app, environment and endpoint),
    /// else the process-wide ``shared`` one. Call it when the component opens: stores are
    /// open by then.
    public static func forPipeline(_ resources: [any PipelineResource], logger: Logger) -> AppStoreAPIRateLimiter {
        for case let store as StateStoreResource in resources {
            if let budget = (try? store.store()) as? any SharedRateBudget {
                logger.info("App Store Server API budgets shared with every instance using \(budget.budgetDescription)")
                return AppStoreAPIRateLimiter(sharedBudget: budget, logger: logger)
            }
        }
        return .shared
    }
}
