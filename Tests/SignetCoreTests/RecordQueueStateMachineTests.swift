import Testing

@testable import SignetCore

/// The queue's rules step by step, with no tasks and no clock: waiters are names, time is
/// instants the test picks.
@Suite("RecordQueueStateMachine")
struct RecordQueueStateMachineTests {
    typealias Machine = RecordQueueStateMachine<Int, String, String>
    let t0 = ContinuousClock.now

    func at(_ milliseconds: Int) -> ContinuousClock.Instant { t0 + .milliseconds(milliseconds) }

    /// What the consumer named in `actions` was resumed with, as text.
    func consumer(_ actions: Machine.Actions) -> String? {
        guard let (waiter, taken) = actions.consumer else { return nil }
        return "\(waiter): \(describe(taken))"
    }

    func describe(_ taken: Machine.Taken) -> String {
        switch taken {
        case .elements(let elements): "\(elements)"
        case .woken: "woken"
        case .end: "end"
        case .failed(let error): "failed \(error)"
        case .cancelled: "cancelled"
        }
    }

    func producers(_ actions: Machine.Actions) -> [String] {
        actions.producers.map { "\($0.waiter): \($0.accepted)" }
    }

    @Test func sendsIntoAnEmptyQueueAreTakenWholeAndInOrder() {
        var machine = Machine(capacity: 4)
        #expect(machine.send([1, 2], now: at(0)).0 == .accepted)
        #expect(machine.send([3], now: at(0)).0 == .accepted)
        let taken = machine.take(max: .max, linger: .none, now: at(0))
        #expect(taken.map { describe($0.0) } == "[1, 2, 3]")
        #expect(machine.count == 0)
    }

    @Test func aSingleSendLargerThanCapacityIsAcceptedIntoAnEmptyQueue() {
        var machine = Machine(capacity: 2)
        #expect(machine.send([1, 2, 3, 4, 5], now: at(0)).0 == .accepted)
        #expect(machine.send([6], now: at(0)).0 == .full)
    }

    @Test func aFullQueueMakesProducersWaitAndAdmitsThemInArrivalOrder() {
        var machine = Machine(capacity: 3)
        _ = machine.send([1, 2], now: at(0))
        #expect(machine.send([3, 4], now: at(0)).0 == .full)
        #expect(producers(machine.waitForRoom([3, 4], producer: "p1", id: 1, cancelled: false, now: at(0))).isEmpty)
        // A later small send that would fit must not overtake the waiting producer.
        #expect(machine.send([5], now: at(0)).0 == .full)
        #expect(producers(machine.waitForRoom([5], producer: "p2", id: 2, cancelled: false, now: at(0))).isEmpty)
        let (taken, actions) = machine.take(max: 1, linger: .none, now: at(1))!
        #expect(describe(taken) == "[1]")
        // [2] + [3, 4] fits in 3; [5] does not yet.
        #expect(producers(actions) == ["p1: true"])
        let (rest, more) = machine.take(max: .max, linger: .none, now: at(2))!
        #expect(describe(rest) == "[2, 3, 4]")
        #expect(producers(more) == ["p2: true"])
        #expect(describe(machine.take(max: .max, linger: .none, now: at(3))!.0) == "[5]")
    }

    @Test func aProducerWhoseRoomAppearedBeforeItWaitedIsAdmittedAtOnce() {
        var machine = Machine(capacity: 1)
        _ = machine.send([1], now: at(0))
        #expect(machine.send([2], now: at(0)).0 == .full)
        _ = machine.poll(max: 1, now: at(0))  // the consumer took it between the two steps
        #expect(producers(machine.waitForRoom([2], producer: "p", id: 1, cancelled: false, now: at(0))) == ["p: true"])
        #expect(machine.count == 1)
    }

    @Test func aCancelledProducerIsRefusedAndItsElementsDropped() {
        var machine = Machine(capacity: 1)
        _ = machine.send([1], now: at(0))
        _ = machine.waitForRoom([2], producer: "p", id: 7, cancelled: false, now: at(0))
        #expect(producers(machine.cancelProducer(id: 7)) == ["p: false"])
        #expect(producers(machine.cancelProducer(id: 7)).isEmpty, "resumed once")
        #expect(describe(machine.take(max: .max, linger: .none, now: at(1))!.0) == "[1]")
        #expect(machine.count == 0)
        // Already cancelled before it waited: refused at once.
        _ = machine.send([3], now: at(1))
        #expect(producers(machine.waitForRoom([4], producer: "q", id: 8, cancelled: true, now: at(1))) == ["q: false"])
    }

    @Test func aWaitingConsumerIsResumedByTheFirstSend() {
        var machine = Machine(capacity: 10)
        #expect(machine.take(max: .max, linger: .none, now: at(0)) == nil)
        let waiting = machine.waitForElements(consumer: "c", id: 1, max: .max, linger: .none, cancelled: false, now: at(0))
        #expect(consumer(waiting) == nil)
        #expect(waiting.deadline == nil, "no linger: no timer")
        let (result, actions) = machine.send([9], now: at(1))
        #expect(result == .accepted)
        #expect(consumer(actions) == "c: [9]")
    }

    @Test func lingeringSinceTheOldestArrivalWakesTheConsumerOncePerBatch() {
        var machine = Machine(capacity: 100)
        let linger = Machine.Linger.sinceOldest(.milliseconds(10))
        #expect(machine.take(max: 3, linger: linger, now: at(0)) == nil)
        _ = machine.waitForElements(consumer: "c", id: 1, max: 3, linger: linger, cancelled: false, now: at(0))
        // The first arrival starts the linger: a timer, no wake-up.
        let first = machine.send([1], now: at(5)).1
        #expect(consumer(first) == nil)
        #expect(first.deadline?.consumer == 1)
        #expect(first.deadline?.at == at(15))
        // More arrivals short of `max` neither wake the consumer nor arm another timer.
        let second = machine.send([2], now: at(8)).1
        #expect(consumer(second) == nil)
        #expect(second.deadline == nil)
        // The deadline hands over what arrived.
        #expect(consumer(machine.deadlinePassed(consumer: 1, now: at(15))) == "c: [1, 2]")
        // A late timer of that wait does nothing.
        #expect(consumer(machine.deadlinePassed(consumer: 1, now: at(16))) == nil)
    }

    @Test func aLingeringConsumerIsWokenAsSoonAsItHasMax() {
        var machine = Machine(capacity: 100)
        let linger = Machine.Linger.sinceOldest(.seconds(1))
        _ = machine.send([1], now: at(0))
        #expect(machine.take(max: 3, linger: linger, now: at(1)) == nil, "fewer than max and the linger is not over")
        let waiting = machine.waitForElements(consumer: "c", id: 1, max: 3, linger: linger, cancelled: false, now: at(1))
        #expect(waiting.deadline?.at == at(1000))
        #expect(consumer(machine.send([2, 3, 4], now: at(2)).1) == "c: [1, 2, 3]")
        // What was left over keeps its arrival: the next take does not linger for it again.
        #expect(describe(machine.take(max: 3, linger: .sinceOldest(.milliseconds(1)), now: at(3))!.0) == "[4]")
    }

    @Test func aTakeWhoseLingerIsOverDoesNotWait() {
        var machine = Machine(capacity: 100)
        _ = machine.send([1], now: at(0))
        #expect(describe(machine.take(max: 5, linger: .sinceOldest(.milliseconds(10)), now: at(10))!.0) == "[1]")
    }

    @Test func lingeringUntilADeadlineEndsEmptyWhenNothingCame() {
        var machine = Machine(capacity: 100)
        #expect(machine.take(max: 2, linger: .until(at(10)), now: at(0)) == nil)
        let waiting = machine.waitForElements(consumer: "c", id: 4, max: 2, linger: .until(at(10)), cancelled: false, now: at(0))
        #expect(waiting.deadline?.at == at(10))
        #expect(consumer(machine.deadlinePassed(consumer: 4, now: at(10))) == "c: []")
        #expect(describe(machine.take(max: 2, linger: .until(at(10)), now: at(11))!.0) == "[]")
    }

    @Test func aWakeReachesAnIdleConsumerOrItsNextTake() {
        var machine = Machine(capacity: 10)
        _ = machine.waitForElements(consumer: "c", id: 1, max: .max, linger: .none, cancelled: false, now: at(0))
        #expect(consumer(machine.wake(now: at(1))) == "c: woken")
        // No one waiting: the next take is woken, once.
        #expect(consumer(machine.wake(now: at(2))) == nil)
        #expect(describe(machine.take(max: .max, linger: .none, now: at(3))!.0) == "woken")
        #expect(machine.take(max: .max, linger: .none, now: at(4)) == nil)
        // Queued elements win over a wake; the wake is then spent.
        machine.wakeAndSend([5], now: at(5))
        #expect(describe(machine.take(max: .max, linger: .none, now: at(6))!.0) == "[5]")
        #expect(machine.take(max: .max, linger: .none, now: at(7)) == nil)
    }

    @Test func aWakeEndsALingeringTakeWithWhatIsQueued() {
        var machine = Machine(capacity: 10)
        _ = machine.send([1], now: at(0))
        _ = machine.waitForElements(consumer: "c", id: 1, max: 5, linger: .sinceOldest(.seconds(1)), cancelled: false, now: at(0))
        #expect(consumer(machine.wake(now: at(1))) == "c: [1]")
    }

    @Test func finishHandsOverWhatIsQueuedThenTheEndOrTheFailure() {
        var machine = Machine(capacity: 10)
        _ = machine.send([1, 2], now: at(0))
        _ = machine.finish(now: at(0))
        #expect(machine.send([3], now: at(0)).0 == .refused)
        // Finishing ends lingering: what is queued goes at once.
        #expect(describe(machine.take(max: 10, linger: .sinceOldest(.seconds(1)), now: at(1))!.0) == "[1, 2]")
        #expect(describe(machine.take(max: 10, linger: .none, now: at(1))!.0) == "end")

        var failing = Machine(capacity: 10)
        _ = failing.send([1], now: at(0))
        _ = failing.finish(failure: TestError(), now: at(0))
        _ = failing.finish(now: at(0))  // a second ending changes nothing
        #expect(describe(failing.take(max: 10, linger: .none, now: at(1))!.0) == "[1]")
        #expect(describe(failing.take(max: 10, linger: .none, now: at(1))!.0) == "failed TestError()")
    }

    @Test func finishResumesAWaitingConsumerAndRefusesWaitingProducers() {
        var machine = Machine(capacity: 1)
        _ = machine.waitForElements(consumer: "c", id: 1, max: .max, linger: .none, cancelled: false, now: at(0))
        #expect(consumer(machine.finish(failure: TestError(), now: at(1))) == "c: failed TestError()")

        var full = Machine(capacity: 1)
        _ = full.send([1], now: at(0))
        _ = full.waitForRoom([2], producer: "p", id: 1, cancelled: false, now: at(0))
        #expect(producers(full.finish(now: at(1))) == ["p: false"])
        #expect(describe(full.take(max: .max, linger: .none, now: at(1))!.0) == "[1]")
    }

    @Test func stopDropsEverythingAndReleasesEveryone() {
        var machine = Machine(capacity: 1)
        _ = machine.send([1], now: at(0))
        _ = machine.waitForRoom([2], producer: "p", id: 1, cancelled: false, now: at(0))
        let stopped = machine.stop()
        #expect(producers(stopped) == ["p: false"])
        #expect(machine.count == 0)
        #expect(describe(machine.take(max: .max, linger: .none, now: at(1))!.0) == "end")
        #expect(machine.send([3], now: at(1)).0 == .refused)
        #expect(machine.stop().producers.isEmpty)

        var waiting = Machine(capacity: 1)
        _ = waiting.waitForElements(consumer: "c", id: 1, max: .max, linger: .none, cancelled: false, now: at(0))
        #expect(consumer(waiting.stop()) == "c: end")
    }

    @Test func aCancelledConsumerIsResumedOnceAndOnlyItself() {
        var machine = Machine(capacity: 1)
        _ = machine.waitForElements(consumer: "c", id: 1, max: .max, linger: .none, cancelled: false, now: at(0))
        #expect(consumer(machine.cancelConsumer(id: 2)) == nil, "another wait's handler")
        #expect(consumer(machine.cancelConsumer(id: 1)) == "c: cancelled")
        #expect(consumer(machine.cancelConsumer(id: 1)) == nil)
        // Cancelled before it waited, with nothing to take: resumed at once.
        #expect(consumer(machine.waitForElements(consumer: "d", id: 3, max: .max, linger: .none, cancelled: true, now: at(1))) == "d: cancelled")
        // Cancelled, but elements are there: it takes them (nothing is lost to a late cancel).
        _ = machine.send([1], now: at(2))
        #expect(consumer(machine.waitForElements(consumer: "e", id: 4, max: .max, linger: .none, cancelled: true, now: at(2))) == "e: [1]")
    }

    @Test func pollNeverWaitsNorEnds() {
        var machine = Machine(capacity: 2)
        #expect(machine.poll(max: 5, now: at(0)).0.isEmpty)
        _ = machine.send([1, 2], now: at(0))
        _ = machine.waitForRoom([3], producer: "p", id: 1, cancelled: false, now: at(0))
        let (first, actions) = machine.poll(max: 1, now: at(1))
        #expect(first == [1])
        #expect(producers(actions) == ["p: true"])
        _ = machine.finish(now: at(1))
        #expect(machine.poll(max: 5, now: at(1)).0 == [2, 3])
        #expect(machine.poll(max: 5, now: at(1)).0.isEmpty)
    }
}

private struct TestError: Error {}

extension RecordQueueStateMachine {
    /// A wake with no consumer waiting, then a send: the state a busy consumer comes back to.
    fileprivate mutating func wakeAndSend(_ elements: [Element], now: Instant) {
        _ = wake(now: now)
        _ = send(elements, now: now)
    }
}
