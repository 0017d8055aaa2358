import Synchronization

// InMemoryStateStore: the support audit log (SupportAuditStore).

/// The ``SupportAuditStore`` role: scans, as the memory store serves embedding and tests.
extension InMemoryStateStore {
    package func beginSupportAction(_ record: SupportActionRecord) throws -> SupportActionRecord {
        contents.withLock { contents in
            if let kept = contents.supportActions[record.requestIdentifier] { return kept }
            contents.supportActions[record.requestIdentifier] = record
            return record
        }
    }

    package func finishSupportAction(_ record: SupportActionRecord) throws {
        contents.withLock { contents in
            guard contents.supportActions[record.requestIdentifier] != nil else { return }
            contents.supportActions[record.requestIdentifier] = record
        }
    }

    package func supportAction(requestIdentifier: String) throws -> SupportActionRecord? {
        contents.withLock { $0.supportActions[requestIdentifier] }
    }

    package func supportActions(originalTransactionId: String) throws -> [SupportActionRecord] {
        contents.withLock { contents in
            Self.ordered(contents.supportActions.values.filter { $0.originalTransactionId == originalTransactionId })
        }
    }

    package func supportActions(since: Int64, limit: Int) throws -> [SupportActionRecord] {
        contents.withLock { contents in
            Array(Self.ordered(contents.supportActions.values.filter { $0.at >= since }).prefix(max(0, limit)))
        }
    }

    private static func ordered(_ records: some Sequence<SupportActionRecord>) -> [SupportActionRecord] {
        records.sorted { ($0.at, $0.requestIdentifier) < ($1.at, $1.requestIdentifier) }
    }
}
