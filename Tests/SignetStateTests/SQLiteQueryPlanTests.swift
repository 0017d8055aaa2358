import Foundation
@testable import SignetState
import SignetStateTestSupport
import Testing

/// The outbox keeps months of history (`outbox_retention`) and the dedupe table a month of
/// keys: the queries that run at every start and every prune must reach the few rows they want
/// through an index. A scan of the whole outbox at every start took 0.85 s with a million
/// purchases and made each notification cost 1.86x (`scripts/bench_scale.py`).
@Suite struct SQLiteQueryPlanTests {
    @Test("start-up redelivery and the retention prunes read through indexes, never a whole table")
    func outboxAndKeyQueriesUseIndexes() throws {
        let path = Fixture.temporaryDatabase()
        try SQLiteStateStore(path: path).close()
        let database = try SQLiteDatabase(path: path)
        defer { database.close() }
        let queries = ["selectUndelivered": SQLiteSchema.selectUndelivered, "pruneEvents": SQLiteSchema.pruneEvents,
                       "pruneKeys": SQLiteSchema.pruneKeys]
        for (name, query) in queries {
            let plan = try database.statement(SQLiteQuery("EXPLAIN QUERY PLAN " + query.sql))
            var steps: [String] = []
            while try plan.step() { steps.append(plan.string(3) ?? "") }
            plan.reset()
            #expect(!steps.isEmpty, "\(name): no plan")
            // A full table scan reads "SCAN outbox" ("SCAN TABLE outbox" in older SQLite); an
            // index walk names its index ("SCAN outbox USING INDEX ..."), a lookup says SEARCH.
            let scans = steps.filter { $0.hasPrefix("SCAN") && !$0.contains("USING") }
            #expect(scans.isEmpty, "\(name) reads a whole table: \(steps)")
        }
    }
}
