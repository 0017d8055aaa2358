import AppStoreModels
import Foundation
import NIOCore
import PostgresNIO
import SignetCore
package import SignetState
import Synchronization

// PostgresStateStore: the forward sink's queue (ForwardQueueStore).

/// The ``ForwardQueueStore`` role.
extension PostgresStateStore {
    package func enqueueForwards(_ bodies: [[UInt8]], targets: [String], at instant: Int64) throws {
        guard !bodies.isEmpty, !targets.isEmpty else { return }
        let encoded = bodies.map { Data($0).base64EncodedString() }
        try withSession("forward enqueue") { session in
            // One statement, so all or none; ids ascend body by body, target by target.
            _ = try session.query("""
                INSERT INTO signet_forward_queue (target, body, enqueued_at, due_at)
                SELECT t.target, decode(b.body, 'base64'), \(instant), \(instant)
                FROM unnest(\(encoded)::text[]) WITH ORDINALITY AS b(body, n)
                CROSS JOIN unnest(\(targets)::text[]) WITH ORDINALITY AS t(target, m)
                ORDER BY b.n, t.m
                """)
        }
    }

    package func claimForwards(target: String, dueAtOrBefore now: Int64, leaseUntil: Int64, limit: Int) throws -> [ForwardQueueItem] {
        let limit = Int64(max(0, limit))
        return try withSession("forward claim") { session in
            // SKIP LOCKED: instances claiming at the same moment take different entries.
            let rows = try session.query("""
                UPDATE signet_forward_queue q SET due_at = \(leaseUntil), attempts = q.attempts + 1
                FROM (SELECT id FROM signet_forward_queue WHERE target = \(target) AND due_at <= \(now)
                      ORDER BY id LIMIT \(limit) FOR UPDATE SKIP LOCKED) c
                WHERE q.id = c.id
                RETURNING q.id, q.body, q.enqueued_at, q.attempts, q.last_error
                """)
            return try rows.map { row in
                let (id, body, enqueuedAt, attempts, lastError) = try row.decode((Int64, ByteBuffer, Int64, Int32, String?).self)
                return ForwardQueueItem(
                    id: id, target: target, body: Array(body.readableBytesView), enqueuedAt: enqueuedAt, attempts: Int(attempts),
                    lastError: lastError)
            }.sorted { $0.id < $1.id }
        }
    }

    package func settleForwards(done: [Int64], retries: [ForwardRetry]) throws {
        guard !done.isEmpty || !retries.isEmpty else { return }
        try withSession("forward settlement") { session in
            if !done.isEmpty { try session.query("DELETE FROM signet_forward_queue WHERE id = ANY(\(done))") }
            guard !retries.isEmpty else { return }
            let (ids, instants, errors) = (retries.map(\.id), retries.map(\.at), retries.map(\.error))
            try session.query("""
                UPDATE signet_forward_queue q SET due_at = v.at, last_error = v.error
                FROM unnest(\(ids)::bigint[], \(instants)::bigint[], \(errors)::text[]) AS v(id, at, error)
                WHERE q.id = v.id
                """)
        }
    }

    package func forwardQueueStatus(target: String) throws -> ForwardQueueStatus {
        try withSession("forward queue status", waitingOutOutages: false) { session in
            let rows = try session.query(
                "SELECT count(*), min(enqueued_at), min(due_at) FROM signet_forward_queue WHERE target = \(target)")
            guard let row = rows.first else { return ForwardQueueStatus(pending: 0, oldestEnqueuedAt: nil, nextDueAt: nil) }
            let (count, oldest, next) = try row.decode((Int64, Int64?, Int64?).self)
            return ForwardQueueStatus(pending: Int(count), oldestEnqueuedAt: oldest, nextDueAt: next)
        }
    }
}
