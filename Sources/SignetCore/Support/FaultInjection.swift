import Foundation
import Synchronization

/// Deterministic crash points for the crash/restart tests (package access: not public API).
///
/// `SIGNET_FAULT=<point>:<n>` kills the process with SIGKILL the n-th time execution
/// reaches `point` — exactly what `kill -9` at that instant would do, but repeatable.
/// Without the variable every call is one relaxed atomic load.
package enum FaultInjection {
    private static let plan: (point: String, count: Int)? = {
        guard let spec = ProcessInfo.processInfo.environment["SIGNET_FAULT"] else { return nil }
        let parts = spec.split(separator: ":")
        guard parts.count == 2, let count = Int(parts[1]), count > 0 else { return nil }
        return (String(parts[0]), count)
    }()
    private static let hits = Atomic<Int>(0)

    /// Marks a crash point; kills the process if the plan says so.
    package static func point(_ name: StaticString) {
        guard let plan, plan.point == name.description else { return }
        if hits.wrappingAdd(1, ordering: .relaxed).newValue == plan.count {
            FileHandle.standardError.write(Data("signet: fault injection: SIGKILL at \(name) #\(plan.count)\n".utf8))
            kill(getpid(), SIGKILL)
        }
    }
}
