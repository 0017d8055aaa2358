/// When the runner took a batch from the source, kept on the batch's first record (a
/// merged batch's first record is its oldest), for the batch latency histogram.
enum BatchReadInstantPart: RecordPartKey {
    typealias Value = ContinuousClock.Instant
}

extension PipelineMetrics {
    /// A batch committed to the source: counts by outcome, batch latency (read to
    /// commit), end-to-end latency of records that carry a source timestamp.
    /// `sourceRecords` leave flight: the records read from the source, not those a
    /// ticking stage generated (they never entered it).
    func batchCommitted(_ batch: RecordBatch, sourceRecords: Int, counts: RunSummary, committedAtMilliseconds: Int64) {
        batchFinished(
            records: sourceRecords, passed: counts.passed, rejectedByReason: counts.rejectedByReason,
            droppedByReason: counts.droppedByReason)
        if let readAt = batch.records.first?[BatchReadInstantPart.self] {
            batchDuration(ContinuousClock.now - readAt)
        }
        for record in batch.records {
            if let written = record.sourceTimestamp {
                endToEndLatency(milliseconds: committedAtMilliseconds &- written)
            }
        }
    }
}
