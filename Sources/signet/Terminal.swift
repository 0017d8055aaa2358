public import ArgumentParser
import Foundation
import Logging
import SignetCore

/// Small helpers for talking to the terminal.
enum Terminal {
    static func error(_ message: String) {
        FileHandle.standardError.write(Data("signet: \(message)\n".utf8))
    }

    static func note(_ message: String) {
        FileHandle.standardError.write(Data("signet: \(message)\n".utf8))
    }

    /// Writes bytes and a newline to stdout.
    static func printLine(_ bytes: [UInt8]) throws(StdoutClosed) {
        try writeStdout(bytes + [0x0A])
    }

    /// Writes all of `bytes` to stdout with write(2). A reader that went away (`| head`)
    /// throws ``StdoutClosed``, which `main` turns into a quiet exit, instead of the fatal
    /// error FileHandle raises.
    static func writeStdout(_ bytes: [UInt8]) throws(StdoutClosed) {
        var failed = false
        bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            var offset = 0
            while offset < buffer.count {
                let written = write(STDOUT_FILENO, base + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    failed = true
                    return
                }
                offset += written
            }
        }
        if failed { throw StdoutClosed() }
    }

    /// Logs go to stderr; stdout carries data only.
    static func bootstrapLogging(level: Logger.Level, format: LogFormat = .text) {
        LoggingSystem.bootstrap { label in
            switch format {
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            case .json:
                var handler = JSONLogHandler(label: label)
                handler.logLevel = level
                return handler
            }
        }
    }

    /// `--log-format`: lines for people, or one JSON object per line for log shippers.
    enum LogFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    /// The process environment, the source of `${VAR}` values.
    static var environment: [String: String] { ProcessInfo.processInfo.environment }
}

/// Standard output cannot be written (its reader is gone, or it was closed).
struct StdoutClosed: Error {}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// Input file arguments of `verify` and `decode`.
enum InputFiles {
    /// One line source per file, or standard input when there are none.
    static func sources(_ files: [String], options: LineSource.Options) -> [LineSource] {
        files.isEmpty ? [LineSource.standardInput(options: options)] : files.map { LineSource(path: $0, options: options) }
    }

    /// Usage errors (exit 2) for inputs that cannot be read as files, before any output.
    static func validate(_ files: [String]) throws {
        for file in files {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: file, isDirectory: &isDirectory) else {
                throw ValidationError("'\(file)' does not exist")
            }
            if isDirectory.boolValue { throw ValidationError("'\(file)' is a directory, not an NDJSON file") }
            if !FileManager.default.isReadableFile(atPath: file) { throw ValidationError("cannot read '\(file)'") }
        }
    }
}
