import SignetAppStoreAPI
import SignetCore
import Synchronization

/// The lifecycle the service-mode stages (`appstore_catch_up`, `appstore_reconcile`) share: the
/// client is built when the stage opens (so loading or linting a pipeline needs no credentials),
/// sweeps run every interval in a task of their own (the pipeline never waits for Apple), and
/// stopping cancels them and shuts the client down.
final class BackgroundSweeps: Sendable {
    private let running = Mutex<(client: AppStoreServerAPIClient?, task: Task<Void, Never>?)>((nil, nil))
    /// What the pause between sweeps waits on: its deadline, or ``wake()``.
    private let alarm = WakeUp()

    /// Builds the client (a failure is a configuration error naming `stage`), lets `announce`
    /// say what the stage will do, then runs `sweep` now and every `interval` after it ends,
    /// until ``stop()`` or until `sweep` returns false (its buffer was closed).
    func start(
        stage: String, interval: Duration, makeClient: () throws -> AppStoreServerAPIClient,
        announce: (AppStoreAPIConfiguration) -> Void, sweep: @escaping @Sendable (AppStoreServerAPIClient) async -> Bool
    ) throws {
        let client: AppStoreServerAPIClient
        do {
            client = try makeClient()
        } catch {
            throw ConfigError("\(stage): \(error)", at: nil)
        }
        announce(client.configuration)
        let task = Task { [alarm] in
            while !Task.isCancelled {
                guard await sweep(client) else { return }
                do {
                    // Until the interval has passed, or someone has work now (``wake()``).
                    try await alarm.wait(for: interval)
                } catch {
                    return
                }
            }
        }
        running.withLock { $0 = (client, task) }
    }

    /// Starts the next sweep now instead of at the end of the interval (at once when none is
    /// running, else right after the running one).
    func wake() {
        alarm.wake()
    }

    /// Cancels the sweeps, waits for them to end and shuts the client down.
    func stop() async throws {
        let (client, task) = running.withLock { running in
            defer { running = (nil, nil) }
            return running
        }
        task?.cancel()
        await task?.value
        try await client?.shutdown()
    }
}
