import SignetCore

extension RecordQueue {
    /// One batch of records for a fetching source's `nextBatch`, from a queue of the API's
    /// answers: `records` (left over from the last batch) first; while there are none, waits
    /// for an answer and lingers up to `linger` from its arrival for enough answers (about
    /// `recordsPerAnswer` records each) to fill `maxRecords`, woken once; then takes what
    /// else is queued, without waiting again.
    ///
    /// `accept` turns an answer into its records and says whether that moved the source's
    /// checkpoint (an answer without records is done at once). The records come back empty
    /// only when fetching ended; those beyond `maxRecords` come back as `overflow`, for the
    /// next batch. Throws the fetching failure (after the answers queued before it).
    func batch(
        startingWith records: [Record], maxRecords: Int, linger: Duration, recordsPerAnswer: Int,
        accept: (Element) -> (records: [Record], advanced: Bool)
    ) async throws -> (records: [Record], overflow: [Record], advanced: Bool) {
        var records = records
        var advanced = false
        func answers(toFill records: Int) -> Int { (records + recordsPerAnswer - 1) / Swift.max(1, recordsPerAnswer) }
        func add(_ answers: [Element]) {
            for answer in answers {
                let (made, moved) = accept(answer)
                records += made
                advanced = advanced || moved
            }
        }
        while records.isEmpty {
            guard let taken = try await take(max: answers(toFill: maxRecords), linger: .sinceOldest(linger)) else { break }
            if case .elements(let answers) = taken { add(answers) }
        }
        while records.count < maxRecords {
            let queued = poll(max: answers(toFill: maxRecords - records.count))
            guard !queued.isEmpty else { break }
            add(queued)
        }
        return (Array(records.prefix(maxRecords)), Array(records.dropFirst(maxRecords)), advanced)
    }
}
