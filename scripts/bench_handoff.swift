// What a hand-off to a sleeping thread costs on this machine: the unit of the webhook's and the
// backfill's per-batch cost at a trickle (docs/benchmarks.md).
//
//   swiftc -O scripts/bench_handoff.swift -o /tmp/bench_handoff && /tmp/bench_handoff
//
// A request passes through N serial dispatch queues (each hop wakes that queue's thread) and
// back to the main thread; one request every 3 ms, so every thread sleeps between requests, as
// at Apple's trickle. Prints the process's CPU (getrusage) per request and per hop, the same
// with requests back to back (threads still awake), and 16 hops that stay on one queue (what
// running several stages of a batch on one thread would cost).
import Dispatch
import Foundation

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
        + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

func measure(hops: Int, gapMicroseconds: UInt32, oneQueue: Bool = false, requests: Int = 1000) {
    let shared = DispatchQueue(label: "hops")
    let queues = (0..<hops).map { oneQueue ? shared : DispatchQueue(label: "hop\($0)") }
    let done = DispatchSemaphore(value: 0)
    @Sendable func pass(_ index: Int) {
        if index == hops { done.signal(); return }
        queues[index].async { pass(index + 1) }
    }
    let start = cpuSeconds()
    for _ in 0..<requests {
        pass(0)
        done.wait()
        if gapMicroseconds > 0 { usleep(gapMicroseconds) }
    }
    let perRequest = (cpuSeconds() - start) / Double(requests) * 1e6
    let pace = gapMicroseconds > 0 ? "one request every \(gapMicroseconds) µs" : "back to back"
    print(String(format: "%2d hops%@, %@: %6.1f µs CPU per request, %5.1f µs per hop", hops,
                 oneQueue ? " on one queue" : "", pace, perRequest, perRequest / Double(hops + 1)))
}

for hops in [1, 4, 16] { measure(hops: hops, gapMicroseconds: 3000) }
measure(hops: 16, gapMicroseconds: 0)
measure(hops: 16, gapMicroseconds: 3000, oneQueue: true)
