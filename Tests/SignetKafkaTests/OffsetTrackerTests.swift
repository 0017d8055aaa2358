import SignetCore
import Testing

@testable import SignetKafka

@Suite("OffsetTracker: contiguous high-water commits")
struct OffsetTrackerTests {
    let p0 = TopicPartition("t", 0)

    func position(_ offset: Int64, _ partition: TopicPartition? = nil) -> SourcePosition {
        let partition = partition ?? p0
        return SourcePosition(stream: partition.topic, partition: partition.partition, offset: offset)
    }

    @Test func commitsOnlyTheContiguousPrefix() {
        var tracker = OffsetTracker()
        tracker.assign([p0])
        for offset in 0...3 { tracker.handOut(p0, offset: Int64(offset)) }
        #expect(tracker.finish([position(0), position(1), position(3)]) == [p0: 2])
        tracker.markCommitted([p0: 2])
        #expect(tracker.uncommitted().isEmpty)
        #expect(tracker.finish([position(2)]) == [p0: 4])
    }

    @Test func nothingMovesWhileTheFirstIsInFlight() {
        var tracker = OffsetTracker()
        tracker.assign([p0])
        for offset in [10, 11, 12] { tracker.handOut(p0, offset: Int64(offset)) }
        #expect(tracker.finish([position(11), position(12)]).isEmpty)
        #expect(tracker.finish([position(10)]) == [p0: 13])
    }

    @Test func gapsInOffsetsDoNotBlock() {
        // Compaction or transaction markers: offsets 5, 8, 9 are consecutive records.
        var tracker = OffsetTracker()
        tracker.assign([p0])
        for offset in [5, 8, 9] { tracker.handOut(p0, offset: Int64(offset)) }
        #expect(tracker.finish([position(5), position(8)]) == [p0: 9])
    }

    @Test func lateAcknowledgementsAfterRevokeAreIgnored() {
        var tracker = OffsetTracker()
        tracker.assign([p0])
        for offset in 0...2 { tracker.handOut(p0, offset: Int64(offset)) }
        #expect(tracker.finish([position(0)]) == [p0: 1])
        // Revoked before 1 and 2 finished: the revoke commits 1 (not yet marked sent).
        #expect(tracker.revoke([p0]) == [p0: 1])
        // The partition comes back; the new epoch re-reads from 1.
        tracker.assign([p0])
        for offset in 1...2 { tracker.handOut(p0, offset: Int64(offset)) }
        // The old copies' acknowledgements arrive first (runner order): swallowed.
        #expect(tracker.finish([position(1), position(2)]).isEmpty)
        #expect(tracker.ignoredLateCommits == 2)
        // The new copies' acknowledgements commit.
        #expect(tracker.finish([position(1), position(2)]) == [p0: 3])
    }

    @Test func unassignedPartitionsAreIgnored() {
        var tracker = OffsetTracker()
        #expect(tracker.finish([position(0)]).isEmpty)
        #expect(tracker.ignoredLateCommits == 1)
        tracker.assign([p0])
        // Never handed out in this epoch.
        #expect(tracker.finish([position(7)]).isEmpty)
    }

    @Test func failedAsyncCommitIsOfferedAgain() {
        var tracker = OffsetTracker()
        tracker.assign([p0])
        tracker.handOut(p0, offset: 0)
        let moved = tracker.finish([position(0)])
        tracker.markCommitted(moved)
        #expect(tracker.uncommitted().isEmpty)
        tracker.commitFailed(p0, offset: 1)
        #expect(tracker.uncommitted() == [p0: 1])
    }
}
