/// When the runner took a batch from the source, kept on the batch's first record (a
/// merged batch's first record is its oldest), for the batch latency histogram.
enum BatchReadInstantKey: RecordPartKey {
    typealias Value = ContinuousClock.Instant
}

extension PipelineMetrics {
    /// A batch committed to the source: counts by outcome, batch latency (read to
    /// commit), end-to-end latency of records that carry a source timestamp.
    func batchCommitted(_ batch: RecordBatch, counts: RunSummary, committedAtMilliseconds: Int64) {
        batchFinished(
            records: batch.count, passed: counts.passed, rejectedByReason: counts.rejectedByReason,
            droppedByReason: counts.droppedByReason, committed: true)
        if let readAt = batch.records.first?[BatchReadInstantKey.self] {
            batchDuration(ContinuousClock.now - readAt)
        }
        for record in batch.records {
            if let written = record.sourceTimestamp {
                endToEndLatency(milliseconds: committedAtMilliseconds &- written)
            }
        }
    }
}
