#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// SIGTERM and SIGINT that arrive while a command is still loading its pipeline (parsing,
/// opening stores, creating clients), before ``PipelineLifecycle``'s service group traps
/// them: without this their default action ends the process with the signal instead of a
/// drain and exit 0. The CLI calls ``catchUntilTheLifecycleStarts()`` first thing; the
/// pipeline service sends a caught signal again once the group's own handling is in place
/// (the group installs it before it starts any service), so it takes the usual path.
package enum StartupSignals {
    /// The signal caught before the lifecycle took over; 0: none. Written by a signal
    /// handler, which may only store to a lock-free atomic.
    private static let caught = Atomic<Int32>(0)

    /// Records SIGTERM and SIGINT from now on instead of dying of them, until the service
    /// group replaces these handlers with its own.
    package static func catchUntilTheLifecycleStarts() {
        // The static is initialised here, never for the first time inside the handler.
        _ = caught.load(ordering: .relaxed)
        for signalNumber in [SIGTERM, SIGINT] {
            signal(signalNumber) { number in StartupSignals.caught.store(number, ordering: .relaxed) }
        }
    }

    /// Sends the process the signal caught during start-up, if any: once the service group
    /// traps it, that starts the graceful shutdown a signal a moment later would have.
    static func redeliver() {
        let number = caught.exchange(0, ordering: .relaxed)
        if number != 0 { kill(getpid(), number) }
    }
}
