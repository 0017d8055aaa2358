/// A source whose input arrives by itself (the webhook's requests) instead of being read when
/// asked: the runner's first stage takes its batches straight from the source's queue. Pulled
/// with ``Source/nextBatch(maxRecords:)`` instead, its records would cross two queues back to
/// back with a task pumping between them.
///
/// The queue has one consumer: the runner when it runs the source, else whoever calls
/// `nextBatch` (an embedder's own loop). The source offers into it, finishes it at
/// ``Source/stop()`` (queued records still drain) and stops it at ``Source/close()``.
package protocol PushSource: Source {
    /// The queue the source offers its records into; its capacity bounds what the source admits.
    var input: RecordQueue<Record> { get }
    /// How the first stage's take lingers, once a record is queued, for more to share its commit.
    var inputLinger: RecordQueueLinger { get }
}
