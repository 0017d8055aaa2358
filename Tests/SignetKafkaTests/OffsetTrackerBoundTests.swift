import SignetCore
import Testing

@testable import SignetKafka

@Suite("OffsetTracker: the bound on work redone")
struct OffsetTrackerBoundTests {
    let p0 = TopicPartition("t", 0)
    let p1 = TopicPartition("t", 1)

    func finish(_ tracker: inout OffsetTracker, _ partition: TopicPartition, _ offsets: Range<Int64>) {
        for offset in offsets { tracker.handOut(partition, offset: offset) }
        tracker.markCommitted(tracker.finish(offsets.map { SourcePosition(stream: partition.topic, partition: partition.partition, offset: $0) }))
    }

    @Test func finishedRecordsCountUntilACommitIsAcknowledged() {
        var tracker = OffsetTracker()
        tracker.assign([p0])
        finish(&tracker, p0, 0..<5)
        #expect(tracker.unacknowledgedRecords([p0]) == [p0: 5])
        tracker.commitSucceeded(p0, offset: 3)
        #expect(tracker.unacknowledgedRecords([p0]) == [p0: 2])
        tracker.commitSucceeded(p0, offset: 5)
        #expect(tracker.unacknowledgedRecords([p0]).isEmpty)
    }

    @Test func onlyARefusedPartitionAtTheLimitIsHeldUntilACommitPasses() {
        var tracker = OffsetTracker()
        tracker.assign([p0, p1])
        finish(&tracker, p0, 0..<5)
        finish(&tracker, p1, 0..<5)
        // At the limit but nothing refused (commits merely in flight): no hold.
        #expect(tracker.updateHolds(limit: 5) == ([], []))
        tracker.commitFailed(p0, offset: 5, retriable: true, at: .now)
        #expect(tracker.updateHolds(limit: 6) == ([], []), "below the limit")
        #expect(tracker.updateHolds(limit: 5) == ([p0], []))
        #expect(tracker.held == [p0])
        #expect(tracker.updateHolds(limit: 5) == ([], []), "only changes are returned")
        tracker.commitSucceeded(p0, offset: 5)
        #expect(tracker.updateHolds(limit: 5) == ([], [p0]))
        #expect(tracker.held.isEmpty)
    }

    @Test func aRevokedPartitionCarriesItsRecordsCountIntoTheNextAssignment() {
        var tracker = OffsetTracker()
        tracker.assign([p0])
        finish(&tracker, p0, 0..<4)
        let records = tracker.unacknowledgedRecords([p0])
        tracker.carryOver(tracker.revoke([p0]), records: records)
        tracker.assign([p0])
        #expect(tracker.unacknowledgedRecords([p0]) == [p0: 4])
        tracker.commitSucceeded(p0, offset: 4)
        #expect(tracker.unacknowledgedRecords([p0]).isEmpty)
    }
}
