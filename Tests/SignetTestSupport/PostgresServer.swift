import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real PostgreSQL server for tests: `initdb` in a temporary directory and `pg_ctl` on
/// 127.0.0.1 with a free port, one per test process (``shared``); each test creates its
/// own database with ``makeDatabase(_:)``.
///
/// Runs as the `postgres` user when the tests run as root (PostgreSQL refuses root). A
/// watchdog shell stops the server when the test process is gone, so a failing or
/// crashing test run never leaves it behind. Tests skip only when the binaries are not
/// installed (``unavailableReason``).
public final class PostgresServer: Sendable {
    public let port: Int
    public let directory: String
    private let binaries: String
    private let runAsPostgres: Bool

    /// The server of this test process, started on first use.
    public static let shared: Result<PostgresServer, PostgresServerError> =
        Result { () throws(PostgresServerError) -> PostgresServer in try PostgresServer() }

    /// A server of its own (a test that stops and restarts it must not disturb the others).
    public static func launch() throws(PostgresServerError) -> PostgresServer { try PostgresServer() }

    /// Why PostgreSQL tests cannot run here (nil when they can): only missing binaries
    /// (`scripts/install-deps.sh` installs them). `SIGNET_TEST_POSTGRES=0` turns them off
    /// for a quick local run; CI never sets it.
    public static var unavailableReason: String? {
        if ProcessInfo.processInfo.environment["SIGNET_TEST_POSTGRES"] == "0" {
            return "PostgreSQL tests turned off by SIGNET_TEST_POSTGRES=0"
        }
        return binaryDirectory() == nil
            ? "PostgreSQL binaries not found under /usr/lib/postgresql/*/bin (install the 'postgresql' package)" : nil
    }

    /// Errors of starting or controlling the server, with its output.
    public struct PostgresServerError: Error, CustomStringConvertible {
        public var description: String
    }

    private init() throws(PostgresServerError) {
        guard let binaries = Self.binaryDirectory() else {
            throw PostgresServerError(description: Self.unavailableReason ?? "no PostgreSQL")
        }
        self.binaries = binaries
        runAsPostgres = getuid() == 0
        let root = NSTemporaryDirectory() + "signet-pg-\(getpid())-\(UUID().uuidString.prefix(8))"
        directory = root
        do {
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        } catch {
            throw PostgresServerError(description: "cannot create \(root): \(error)")
        }
        if runAsPostgres { try Self.run("/bin/chown", ["postgres:postgres", root], asPostgres: false) }
        do {
            port = try freeLocalPort()
        } catch {
            throw PostgresServerError(description: error.description)
        }
        try Self.run(binaries + "/initdb", ["-D", root + "/data", "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"],
                     asPostgres: runAsPostgres)
        try start()
        // Stops the server once this process is gone (normal exit, failure or crash).
        let watchdog = "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; "
            + command(binaries + "/pg_ctl", ["-D", root + "/data", "-m", "immediate", "stop"]) + "; rm -rf \(root)"
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", watchdog]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { throw PostgresServerError(description: "cannot start the watchdog: \(error)") }
    }

    /// A URL for `database` on this server.
    public func url(_ database: String) -> String {
        "postgres://postgres@127.0.0.1:\(port)/\(database)?sslmode=disable"
    }

    /// Creates a fresh, empty database with a unique name; returns its URL.
    public func makeDatabase(_ prefix: String = "t") throws(PostgresServerError) -> String {
        let name = "\(prefix)_\(UUID().uuidString.prefix(12).lowercased().replacingOccurrences(of: "-", with: ""))"
        try psql("postgres", "CREATE DATABASE \(name)")
        return url(name)
    }

    /// Runs SQL through `psql` and returns its unaligned, tuples-only output.
    @discardableResult
    public func psql(_ database: String, _ sql: String) throws(PostgresServerError) -> String {
        try Self.run(binaries + "/psql", ["-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", database,
                                          "-v", "ON_ERROR_STOP=1", "-At", "-c", sql], asPostgres: false)
    }

    /// The database name in a URL made by ``makeDatabase(_:)``.
    public static func databaseName(_ url: String) -> String {
        URLComponents(string: url).map { String($0.path.dropFirst()) } ?? ""
    }

    /// Stops the server (fast shutdown: connections are cut).
    public func stop() throws(PostgresServerError) {
        try Self.run(binaries + "/pg_ctl", ["-D", directory + "/data", "-m", "fast", "-w", "stop"], asPostgres: runAsPostgres)
    }

    /// Starts the (stopped) server again on the same port.
    public func start() throws(PostgresServerError) {
        let settings = "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200 -c deadlock_timeout=100ms"
        try Self.run(binaries + "/pg_ctl", ["-D", directory + "/data", "-l", directory + "/server.log", "-o", settings, "-w", "start"],
                     asPostgres: runAsPostgres)
    }

    private func command(_ executable: String, _ arguments: [String]) -> String {
        let line = ([executable] + arguments).map { "'\($0)'" }.joined(separator: " ")
        return runAsPostgres ? "runuser -u postgres -- \(line)" : line
    }

    private static func binaryDirectory() -> String? {
        let base = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        return versions.sorted { (Int($0) ?? 0) > (Int($1) ?? 0) }
            .map { "\(base)/\($0)/bin" }
            .first { FileManager.default.isExecutableFile(atPath: $0 + "/pg_ctl") }
    }

    /// Runs a command to its end, output to a file (not a pipe: the server started by pg_ctl
    /// inherits the descriptor and would keep a pipe open for its whole life).
    ///
    /// Every other descriptor is closed first (by a bash wrapper: glibc's `closefrom` spawn
    /// action is not visible to Swift). Without that the server inherited whatever the test
    /// process had open, such as the write end of another test's `signet` stdin pipe, and
    /// that `signet` never saw end of input and never exited.
    ///
    /// posix_spawn and waitpid on that pid rather than Foundation's Process: Process left
    /// `runuser pg_ctl start` a zombie it never reaped here, so `waitUntilExit()` never returned.
    @discardableResult
    private static func run(_ executable: String, _ arguments: [String], asPostgres: Bool) throws(PostgresServerError) -> String {
        let command = asPostgres ? ["/usr/sbin/runuser", "-u", "postgres", "--", executable] + arguments : [executable] + arguments
        let closeInherited = #"for fd in $(ls /proc/$$/fd); do [ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null; done; exec "$@""#
        let argv = ["/bin/bash", "-c", closeInherited, "signet-postgres-test"] + command
        let outputPath = NSTemporaryDirectory() + "signet-pg-output-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let cArguments = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else {
            throw PostgresServerError(description: "cannot run \(argv[0]): \(String(cString: strerror(spawned)))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // WIFEXITED && WEXITSTATUS == 0, spelled out (the C macros are not imported).
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw PostgresServerError(description: "\((executable as NSString).lastPathComponent) \(arguments.joined(separator: " ")) failed (status \(status)): \(text)")
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}
