import Foundation
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import SignetCore

/// One PostgreSQL connection used synchronously: connects lazily, runs a query and waits
/// for its result, and drops the connection after a failure so the next call reconnects.
///
/// Why blocking is safe here: the state store is called from a ``BlockingExecutor`` (every
/// stage, sink and store reader has its own serial queue, whose blocks run on Dispatch's
/// worker threads: neither Swift's cooperative pool nor an event loop) or from the CLI's main
/// thread, never from a NIO event loop. postgres-nio completes its futures on its own event-loop
/// threads (``MultiThreadedEventLoopGroup/singleton``), which never wait on us, so
/// `EventLoopFuture.wait()` cannot deadlock; it also never needs the Swift concurrency
/// pool, so waiting on a cooperative thread (a test calling the store directly) only
/// parks that thread. NIO traps if `wait()` is called on an event loop, which would
/// reveal misuse at once.
///
/// Not thread-safe on its own: `@unchecked Sendable` because each owner (the store's and
/// the lease's `Mutex`) calls it only under its lock, one thread at a time.
final class PostgresSession: @unchecked Sendable {
    private let options: PostgresStoreOptions
    private let logger: Logger
    private let applicationName: String
    private var connection: PostgresConnection?

    init(options: PostgresStoreOptions, applicationName: String, logger: Logger) {
        self.options = options
        self.applicationName = applicationName
        self.logger = logger
    }

    /// Runs one statement and returns its rows. A failure of the connection (not of the
    /// statement) closes it, so the next call starts a fresh one.
    @discardableResult
    func query(_ query: PostgresQuery) throws(PostgresStoreError) -> [PostgresRow] {
        let connection = try connected()
        return try failing { try connection.query(query, logger: logger).wait().rows }
    }

    /// Runs one statement without parameters (DDL, transaction control).
    func execute(_ sql: String) throws(PostgresStoreError) {
        let connection = try connected()
        _ = try failing { try connection.simpleQuery(sql).wait() }
    }

    /// Runs `body`, mapping its error; a failure of the connection (no SQLSTATE) drops it.
    private func failing<Result>(_ body: () throws -> Result) throws(PostgresStoreError) -> Result {
        do {
            return try body()
        } catch let error as PSQLError {
            let failure = Self.failure(error, url: options.url)
            if failure.sqlState == nil { drop() }
            throw failure
        } catch {
            drop()
            throw PostgresStoreError("PostgreSQL at \(options.url.redacted): \(error)")
        }
    }

    /// Closes the connection (if any).
    func drop() {
        guard let connection else { return }
        self.connection = nil
        try? connection.close().wait()
    }

    private func connected() throws(PostgresStoreError) -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        connection = nil
        let url = options.url
        var configuration = PostgresConnection.Configuration(
            host: url.host, port: url.port, username: url.user, password: url.password, database: url.database,
            tls: try Self.tls(url))
        configuration.options.connectTimeout = .milliseconds(options.connectTimeout.clampedMilliseconds)
        do {
            let opened = try PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration, id: 1, logger: logger
            ).wait()
            let timeout = options.statementTimeout.clampedMilliseconds
            _ = try opened.simpleQuery("SET statement_timeout = \(max(timeout, 0))").wait()
            _ = try opened.simpleQuery("SET application_name = '\(applicationName)'").wait()
            connection = opened
            return opened
        } catch let error as PSQLError {
            throw Self.failure(error, url: url, connecting: true)
        } catch {
            throw PostgresStoreError("cannot connect to PostgreSQL at \(url.redacted): \(Self.cause(error))")
        }
    }

    private static func tls(_ url: PostgresURL) throws(PostgresStoreError) -> PostgresConnection.Configuration.TLS {
        var tls = TLSConfiguration.makeClientConfiguration()
        switch url.sslMode {
        case .disable: return .disable
        case .prefer, .require: tls.certificateVerification = .none
        case .verifyCA: tls.certificateVerification = .noHostnameVerification
        case .verifyFull: tls.certificateVerification = .fullVerification
        }
        do {
            let context = try NIOSSLContext(configuration: tls)
            return url.sslMode == .prefer ? .prefer(context) : .require(context)
        } catch {
            throw PostgresStoreError("cannot set up TLS for PostgreSQL: \(error)")
        }
    }

    /// A connection failure in an operator's words ("connection refused", "the host name
    /// does not resolve"), without NIO's type names and socket addresses.
    static func cause(_ error: any Error) -> String {
        if let connection = error as? NIOConnectionError {
            if connection.dnsAError != nil || connection.dnsAAAAError != nil {
                return "the host name '\(connection.host)' does not resolve"
            }
            if let first = connection.connectionErrors.first { return cause(first.error) }
        }
        if let io = error as? IOError { return String(cString: strerror(io.errnoCode)).lowercased() }
        if case .connectTimeout? = error as? ChannelError { return "the connection timed out" }
        return "\(error)"
    }

    /// A server error keeps its SQLSTATE and message; a connection error has neither, and
    /// names the server (password redacted) and the cause, e.g. "connection refused".
    static func failure(_ error: PSQLError, url: PostgresURL, connecting: Bool = false) -> PostgresStoreError {
        if let info = error.serverInfo {
            let message = info[.message] ?? "server error"
            return PostgresStoreError("PostgreSQL: \(message)", sqlState: info[.sqlState])
        }
        let cause = error.underlying.map(Self.cause) ?? "\(error.code)"
        let what = connecting ? "cannot connect to PostgreSQL" : "lost the connection to PostgreSQL"
        return PostgresStoreError("\(what) at \(url.redacted): \(cause)")
    }
}
