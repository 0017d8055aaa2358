import Dispatch
public import Foundation
import Synchronization

/// A process a test starts, talks to and stops: the one place the tests spawn anything
/// (`signet`, kcat, curl, python3).
///
/// Output is collected on Dispatch threads as it arrives, so a chatty child never blocks on
/// a full pipe, and the async waits sleep instead of blocking: the code under test shares
/// Swift's cooperative pool (two threads on two cores) with the tests.
///
/// `@unchecked Sendable`: the only stored state besides immutable values and `Mutex`es is
/// the `Process`, and of it only `isRunning`, `processIdentifier`, `terminationStatus`,
/// `terminationReason` and `waitUntilExit()` are used after `run()`, which Foundation
/// documents as safe from any thread.
public final class ChildProcess: @unchecked Sendable {
    private let process = Process()
    private let input: Pipe?
    private let output = Buffer()
    private let errors = Buffer()
    /// Left once per stream at its end of file.
    private let drained = DispatchGroup()

    /// Bytes a stream delivered so far.
    private final class Buffer: Sendable {
        let bytes = Mutex(Data())
    }

    /// Writing to a child that already exited must fail that write, not kill the test process.
    private static let ignoreSIGPIPE: Void = { signal(SIGPIPE, SIG_IGN) }()

    /// The PATH-resolved `env`, for tools looked up by name (`curl`, `python3`).
    public static let env = URL(fileURLWithPath: "/usr/bin/env")

    /// Starts `executable arguments...` with the test process's environment minus its
    /// `SIGNET_*` variables (a developer's shell must not change a test), plus `environment`.
    ///
    /// - Parameter stdin: whether the test writes the child's standard input (otherwise it reads /dev/null).
    public init(
        _ executable: URL, _ arguments: [String], environment: [String: String] = [:], currentDirectory: URL? = nil,
        stdin: Bool = true
    ) throws {
        _ = Self.ignoreSIGPIPE
        process.executableURL = executable
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment
        for key in merged.keys where key.hasPrefix("SIGNET_") && key != "SIGNET_BINARY" { merged[key] = nil }
        merged.merge(environment) { $1 }
        process.environment = merged
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        input = stdin ? Pipe() : nil
        process.standardInput = input ?? FileHandle.nullDevice
        let outputPipe = Pipe(), errorPipe = Pipe()
        process.standardOutput = outputPipe
        process.standardError = errorPipe
        try process.run()
        for (pipe, buffer) in [(outputPipe, output), (errorPipe, errors)] {
            drained.enter()
            // A thread of its own, not Dispatch's global pool: a loaded test run blocks many pool
            // threads waiting on children, and a reader queued behind them would leave `stdout`
            // empty when ``reap()``'s wait for the pipes ran out.
            Thread { [drained] in
                // read(2) directly: FileHandle.availableData traps on EINTR (swift-corelibs-foundation),
                // and the tests send signals.
                let descriptor = pipe.fileHandleForReading.fileDescriptor
                var chunk = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { break }
                    buffer.bytes.withLock { $0.append(contentsOf: chunk[0..<count]) }
                }
                drained.leave()
            }.start()
        }
    }

    /// Starts the built `signet` (``SignetProcess/executable``).
    public static func signet(
        _ arguments: [String], environment: [String: String] = [:], currentDirectory: URL? = nil, stdin: Bool = true
    ) throws -> ChildProcess {
        try ChildProcess(
            SignetProcess.executable, arguments, environment: environment, currentDirectory: currentDirectory, stdin: stdin)
    }

    deinit {
        stop()
    }

    // MARK: Input

    /// Writes to the child's standard input (which stays open).
    public func write(_ data: Data) throws {
        try input?.fileHandleForWriting.write(contentsOf: data)
    }

    public func write(_ text: String) throws {
        try write(Data(text.utf8))
    }

    /// Closes standard input: the child sees end of file.
    public func closeInput() {
        try? input?.fileHandleForWriting.close()
    }

    // MARK: Output so far

    public var stdout: Data { output.bytes.withLock { $0 } }
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    public var stderrText: String { String(decoding: errors.bytes.withLock { $0 }, as: UTF8.self) }
    /// Complete lines on stdout so far.
    public var stdoutLineCount: Int { output.bytes.withLock { $0.count(where: { $0 == 0x0A }) } }

    /// The first complete stdout line, if one arrived.
    public var firstStdoutLine: String? {
        output.bytes.withLock { data in
            data.firstIndex(of: 0x0A).map { String(decoding: data[data.startIndex..<$0], as: UTF8.self) }
        }
    }

    // MARK: Life

    public var pid: Int32 { process.processIdentifier }
    public var isRunning: Bool { process.isRunning }
    /// Whether it ended by a signal (``exitStatus`` is then the signal number).
    public var killedBySignal: Bool { !process.isRunning && process.terminationReason == .uncaughtSignal }
    /// The exit status (or signal number); nil while it runs.
    public var exitStatus: Int32? { process.isRunning ? nil : process.terminationStatus }

    /// Sends `signal` if the child still runs.
    public func send(_ signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Waits, sleeping between checks, until `condition` holds or `timeout` passes; whether it held.
    public func waitUntil(timeout: Duration, _ condition: () -> Bool) async -> Bool {
        await pollUntil(timeout: timeout, condition)
    }

    /// The same wait for synchronous tests (it blocks its thread).
    public func blockingWaitUntil(timeout: Duration, _ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    /// Waits up to `timeout` for the exit and for the output to be complete; the exit status
    /// (or signal number), nil if it still runs.
    public func exit(within timeout: Duration) async -> Int32? {
        guard await waitUntil(timeout: timeout, { !process.isRunning }) else { return nil }
        return reap()
    }

    /// ``exit(within:)`` for synchronous callers.
    public func blockingExit(within timeout: Duration) -> Int32? {
        guard blockingWaitUntil(timeout: timeout, { !process.isRunning }) else { return nil }
        return reap()
    }

    private func reap() -> Int32 {
        process.waitUntilExit()
        // The pipes reach end of file once the child (and anything it started) has exited.
        _ = drained.wait(timeout: .now() + 5)
        return process.terminationStatus
    }

    /// SIGKILL and reap; does nothing once it has exited.
    public func stop() {
        closeInput()
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// The last `count` stderr lines, for failure messages.
    public func stderrTail(_ count: Int = 15) -> String {
        stderrText.split(separator: "\n").suffix(count).joined(separator: "\n")
    }
}

/// Checks `condition` every 20 ms until it holds or `timeout` passes; whether it held.
public func pollUntil(timeout: Duration, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}
