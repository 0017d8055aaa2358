import AppStoreModels
import Foundation
import SignetCore
import Synchronization

// SQLiteStateStore: the event outbox (EventOutboxStore, EventOutboxTransaction).

/// The ``EventOutboxStore`` role.
extension SQLiteStateStore {
    package func undeliveredEvents() throws -> [OutboxEntry] {
        try withConnection { connection in
            let statement = try connection.database.statement(SQLiteSchema.selectUndelivered)
            defer { statement.reset() }
            var entries: [OutboxEntry] = []
            while try statement.step() { entries.append(SQLiteSchema.outboxEntry(from: statement)) }
            connection.inFlight.formUnion(entries.map(\.sequence))
            return entries
        }
    }

    package func markDelivered(_ sequences: [Int64], at instant: Int64) throws {
        guard !sequences.isEmpty else { return }
        let deleting = options.outboxRetention <= .zero
        let relaxed = options.durability == .full
        try withConnection { connection in
            // Losing a delivery mark to a power cut only means a redelivery (at-least-once),
            // so this commit skips its fsync; the next batch's FULL commit syncs the WAL anyway.
            if relaxed { try connection.database.statement(SQLiteSchema.relaxSync).run() }
            defer { if relaxed { try? connection.database.statement(SQLiteSchema.fullSync).run() } }
            try connection.database.transaction {
                let statement = try connection.database.statement(deleting ? SQLiteSchema.deleteEvents : SQLiteSchema.markEvents)
                for run in Self.consecutiveRuns(sequences) {
                    try statement.bind(1, run.lowerBound)
                    try statement.bind(2, run.upperBound)
                    if !deleting { try statement.bind(3, instant) }
                    try statement.run()
                }
            }
            connection.inFlight.subtract(sequences)
        }
    }

    package func eventHistory(originalTransactionId: String, limit: Int) throws -> [EventHistoryEntry] {
        try withConnection { connection in
            let statement = try connection.database.statement(SQLiteSchema.selectHistory)
            defer { statement.reset() }
            try statement.bind(1, originalTransactionId)
            try statement.bind(2, Int64(max(0, limit)))
            var entries: [EventHistoryEntry] = []
            while try statement.step() {
                entries.append(EventHistoryEntry(
                    sequence: statement.int64(0) ?? 0, createdAt: statement.int64(1) ?? 0, deliveredAt: statement.int64(2),
                    payload: statement.bytes(3)))
            }
            return entries.reversed()
        }
    }
}

extension SQLiteStateTransaction: EventOutboxTransaction {
    func appendEvent(_ event: EntitlementEvent, payload: [UInt8], inputKey: String, createdAt: Int64) throws -> Int64 {
        let statement = try database.statement(SQLiteSchema.insertEvent)
        try statement.bind(1, event.eventId)
        try statement.bind(2, event.type.rawValue)
        try statement.bind(3, event.messageKey)
        try statement.bind(4, event.environment)
        try statement.bind(5, event.productId)
        try statement.bind(6, bytes: payload)
        try statement.bind(7, createdAt)
        try statement.bind(8, inputKey)
        try statement.run()
        let sequence = database.lastInsertRowID
        appended.append(sequence)
        return sequence
    }

    func undeliveredEvents(inputKey: String) throws -> [OutboxEntry] {
        let statement = try database.statement(SQLiteSchema.selectUndeliveredByInput)
        defer { statement.reset() }
        try statement.bind(1, inputKey)
        var entries: [OutboxEntry] = []
        while try statement.step() {
            let entry = SQLiteSchema.outboxEntry(from: statement)
            if !inFlight.contains(entry.sequence) { entries.append(entry) }
        }
        return entries
    }
}
