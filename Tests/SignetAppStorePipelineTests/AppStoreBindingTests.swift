import SignetCore
import SignetTestSupport
import Testing

import SignetAppStorePipeline

/// The App Store components declare each key that sets an option once, bound to their options
/// (the API settings, defaults naming variables, are read apart).
@Suite("appstore component bindings")
struct AppStoreBindingTests {
    @Test func historySource() throws {
        #expect(
            try boundDefaultMismatches(AppStoreHistorySource.Options.configuration, in: .appStoreHistorySource, mapping: "start: 72h")
                == [])
    }

    @Test func catchUpStage() throws {
        #expect(try boundDefaultMismatches(AppStoreCatchUpStage.Options.configuration, in: .appStoreCatchUpStage) == [])
    }

    @Test func reconcileStage() throws {
        #expect(try boundDefaultMismatches(AppStoreReconcileStage.Options.configuration, in: .appStoreReconcileStage) == [])
    }

    @Test func statusSource() throws {
        #expect(try boundDefaultMismatches(AppStoreStatusSource.Options.configuration, in: .appStoreStatusSource) == [])
    }

    @Test func consumptionStage() throws {
        #expect(try boundDefaultMismatches(AppStoreConsumptionStage.Options.configuration, in: .appStoreConsumptionStage) == [])
    }

    @Test func deliveryHealthStage() throws {
        #expect(try boundDefaultMismatches(AppStoreDeliveryHealthStage.Options.configuration, in: .appStoreDeliveryHealthStage) == [])
    }

    /// The bound keys sit where they always did, before the checkpoint and the API settings.
    @Test func keysKeepTheirOrder() {
        let names = { (spec: ComponentSpec) in Array(spec.fields.map(\.name).prefix { $0 != "key_id" }) }
        #expect(names(.appStoreHistorySource) == ["start", "end", "only_failures", "sub_windows", "parallelism", "checkpoint"])
        #expect(names(.appStoreCatchUpStage) == ["interval", "window", "overlap", "only_failures"])
        #expect(names(.appStoreReconcileStage) == ["interval", "window", "leeway", "limit", "store"])
        #expect(names(.appStoreStatusSource) == ["original_transaction_ids", "ids_file", "parallelism", "checkpoint"])
    }
}
