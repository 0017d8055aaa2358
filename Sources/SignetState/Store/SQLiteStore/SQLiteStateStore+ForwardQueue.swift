import AppStoreModels
import Foundation
import SignetCore
import Synchronization

// SQLiteStateStore: the forward sink's queue (ForwardQueueStore).

/// The ``ForwardQueueStore`` role.
extension SQLiteStateStore {
    package func enqueueForwards(_ bodies: [[UInt8]], targets: [String], at instant: Int64) throws {
        guard !bodies.isEmpty, !targets.isEmpty else { return }
        try withConnection { connection in
            try connection.database.transaction {
                let insert = try connection.database.statement(SQLiteSchema.insertForward)
                for body in bodies {
                    for target in targets {
                        insert.reset()
                        try insert.bind(1, target)
                        try insert.bind(2, bytes: body)
                        try insert.bind(3, instant)
                        try insert.run()
                    }
                }
            }
        }
    }

    package func claimForwards(target: String, dueAtOrBefore now: Int64, leaseUntil: Int64, limit: Int) throws -> [ForwardQueueItem] {
        try withConnection { connection in
            // A write transaction: a second process on the same file claims after this one committed its leases.
            try connection.database.transaction {
                let select = try connection.database.statement(SQLiteSchema.selectDueForwards)
                defer { select.reset() }
                try select.bind(1, target)
                try select.bind(2, now)
                try select.bind(3, Int64(max(0, limit)))
                var items: [ForwardQueueItem] = []
                while try select.step() {
                    items.append(
                        ForwardQueueItem(
                            id: select.int64(0) ?? 0, target: target, body: select.bytes(1), enqueuedAt: select.int64(2) ?? 0,
                            attempts: Int(select.int64(3) ?? 0) + 1, lastError: select.string(4)))
                }
                select.reset()
                let lease = try connection.database.statement(SQLiteSchema.leaseForward)
                for item in items {
                    lease.reset()
                    try lease.bind(1, item.id)
                    try lease.bind(2, leaseUntil)
                    try lease.run()
                }
                return items
            }
        }
    }

    package func settleForwards(done: [Int64], retries: [ForwardRetry]) throws {
        guard !done.isEmpty || !retries.isEmpty else { return }
        try withConnection { connection in
            try connection.database.transaction {
                let delete = try connection.database.statement(SQLiteSchema.deleteForward)
                for id in done {
                    delete.reset()
                    try delete.bind(1, id)
                    try delete.run()
                }
                let retry = try connection.database.statement(SQLiteSchema.retryForward)
                for entry in retries {
                    retry.reset()
                    try retry.bind(1, entry.id)
                    try retry.bind(2, entry.at)
                    try retry.bind(3, entry.error)
                    try retry.run()
                }
            }
        }
    }

    package func forwardQueueStatus(target: String) throws -> ForwardQueueStatus {
        try withConnection { connection in
            let statement = try connection.database.statement(SQLiteSchema.selectForwardStatus)
            defer { statement.reset() }
            try statement.bind(1, target)
            guard try statement.step() else { return ForwardQueueStatus(pending: 0, oldestEnqueuedAt: nil, nextDueAt: nil) }
            return ForwardQueueStatus(
                pending: Int(statement.int64(0) ?? 0), oldestEnqueuedAt: statement.int64(1), nextDueAt: statement.int64(2))
        }
    }
}
