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
        // Revoked before 1 and 2 finished: the revoke commits 1.
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
        let now = ContinuousClock.now
        tracker.commitFailed(p0, offset: 1, retriable: false, at: now)
        #expect(tracker.uncommitted() == [p0: 1])
        // A final failure is not sent again by itself.
        #expect(tracker.dueRetries(at: now + .seconds(60)).isEmpty)
    }

    @Test func retriableCommitFailuresComeDueWithGrowingBackoff() {
        var tracker = OffsetTracker()
        tracker.assign([p0])
        tracker.handOut(p0, offset: 0)
        tracker.markCommitted(tracker.finish([position(0)]))
        let start = ContinuousClock.now
        tracker.commitFailed(p0, offset: 1, retriable: true, at: start)
        #expect(tracker.dueRetries(at: start).isEmpty, "not before the backoff")
        let first = start + OffsetTracker.initialRetryBackoff
        #expect(tracker.dueRetries(at: first) == [p0: 1])
        // Sent again and failed again: twice the wait.
        tracker.markCommitted([p0: 1])
        #expect(tracker.dueRetries(at: first).isEmpty, "sent, not due")
        tracker.commitFailed(p0, offset: 1, retriable: true, at: first)
        #expect(tracker.dueRetries(at: first + OffsetTracker.initialRetryBackoff).isEmpty)
        #expect(tracker.dueRetries(at: first + OffsetTracker.initialRetryBackoff * 2) == [p0: 1])
        // Success resets; a revoked partition is never retried.
        tracker.markCommitted([p0: 1])
        tracker.commitSucceeded(p0, offset: 1)
        tracker.handOut(p0, offset: 1)
        tracker.markCommitted(tracker.finish([position(1)]))
        tracker.commitFailed(p0, offset: 2, retriable: true, at: start)
        #expect(tracker.dueRetries(at: start + OffsetTracker.initialRetryBackoff) == [p0: 2])
        _ = tracker.revoke([p0])
        #expect(tracker.dueRetries(at: start + .seconds(60)).isEmpty)
    }
}
