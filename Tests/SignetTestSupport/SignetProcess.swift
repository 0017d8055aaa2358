import Dispatch
public import Foundation

/// Runs the built `signet` executable as a user would, for end-to-end tests.
public struct SignetProcess {
    /// What a finished run left behind.
    public struct Result: Sendable {
        public var exitCode: Int32
        public var stdout: Data
        public var stderr: String
        public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
        /// stdout split into non-empty lines.
        public var lines: [String] { stdoutText.split(separator: "\n").map(String.init) }
        /// Each stdout line parsed as a JSON object.
        public func jsonLines() throws -> [[String: Any]] {
            try lines.map { line in
                guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    throw CocoaError(.coderReadCorrupt)
                }
                return object
            }
        }
    }

    /// The `signet` binary next to the test bundle (SwiftPM builds every product into one folder).
    public static let executable: URL = {
        if let override = ProcessInfo.processInfo.environment["SIGNET_BINARY"] {
            return URL(fileURLWithPath: override)
        }
        let testBinary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = testBinary.deletingLastPathComponent()
        // On Linux the xctest binary sits in the build folder; on macOS inside a bundle.
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("signet")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory.deleteLastPathComponent()
        }
        return FixturePaths.packageRoot.appendingPathComponent(".build/debug/signet")
    }()

    /// Runs `signet arguments...`, feeding `stdin`, and waits at most `timeout` seconds
    /// (then kills it and fails with exit code -1, so a hang never blocks the suite).
    @discardableResult
    public static func run(
        _ arguments: [String], stdin: Data = Data(), environment: [String: String] = [:],
        currentDirectory: URL? = nil, timeout: TimeInterval = 120
    ) throws -> Result {
        try run(
            executable: executable, arguments, stdin: stdin, environment: environment,
            currentDirectory: currentDirectory, timeout: timeout)
    }

    /// ``run(_:stdin:environment:currentDirectory:timeout:)`` waited for on a Dispatch thread,
    /// for async tests: a long run then holds no thread of Swift's cooperative pool (two on two
    /// cores), which every async test in the process shares.
    public static func output(
        _ arguments: [String], stdin: Data = Data(), environment: [String: String] = [:],
        currentDirectory: URL? = nil, timeout: TimeInterval = 120
    ) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Swift.Result {
                    try run(arguments, stdin: stdin, environment: environment, currentDirectory: currentDirectory, timeout: timeout)
                })
            }
        }
    }

    /// Runs `bash -c script` with `$SIGNET` set to the `signet` binary: for the cases a user
    /// meets in a shell (`signet run | head -1`, two runs at once).
    @discardableResult
    public static func shell(
        _ script: String, environment: [String: String] = [:], currentDirectory: URL? = nil, timeout: TimeInterval = 120
    ) throws -> Result {
        var environment = environment
        environment["SIGNET"] = executable.path
        return try run(
            executable: URL(fileURLWithPath: "/bin/bash"), ["-c", script], environment: environment,
            currentDirectory: currentDirectory, timeout: timeout)
    }

    /// Runs any executable (through ``ChildProcess``) with the test process's environment minus
    /// its SIGNET_* variables, plus `environment`.
    @discardableResult
    public static func run(
        executable: URL, _ arguments: [String], stdin: Data = Data(), environment: [String: String] = [:],
        currentDirectory: URL? = nil, timeout: TimeInterval = 120
    ) throws -> Result {
        let child = try ChildProcess(executable, arguments, environment: environment, currentDirectory: currentDirectory)
        // Written from another thread: a child that writes before reading must not deadlock with us.
        DispatchQueue.global().async {
            try? child.write(stdin)
            child.closeInput()
        }
        guard let status = child.blockingExit(within: .milliseconds(Int64(timeout * 1000))) else {
            child.stop()
            return Result(exitCode: -1, stdout: child.stdout, stderr: "timed out after \(timeout) s\n" + child.stderrText)
        }
        return Result(exitCode: status, stdout: child.stdout, stderr: child.stderrText)
    }
}

/// A temporary directory removed when the test ends (call `remove()` in tearDown or defer).
public struct TemporaryDirectory {
    public let url: URL
    public init(prefix: String = "signet-test") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    /// Writes `text` to `name` in the directory; returns its path.
    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String {
        let file = path(name)
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        return file
    }
    public func remove() { try? FileManager.default.removeItem(at: url) }
}
