import ArgumentParser
import Foundation
import SignetCore
import SignetHTTP

/// `signet top`: a live view of a running instance's counters and rates, from its operators'
/// listener (like `vector top`).
struct TopCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "top",
        abstract: "Shows a running Signet's rates and gauges live, from its /metrics.",
        discussion: """
            Scrapes the operators' listener (the `http:` section; default 127.0.0.1:9464) every --interval and shows records read, passed, rejected and dropped per second, events out by type, dead letters, rejections by reason, sink failures, Kafka lag, the delivery round trip and pending refund questions, whichever the instance exports. Ctrl-C quits. --once prints one view (two scrapes an interval apart) and exits: for scripts, or a terminal that is not one.

            Example:
              signet top --url http://127.0.0.1:9464
            """)

    @Option(help: "The operators' listener.")
    var url: String = "http://127.0.0.1:9464"

    @Option(help: "Time between scrapes (e.g. 1s, 5s).")
    var interval: String = "2s"

    @Flag(help: "Print one view and exit.")
    var once = false

    func validate() throws {
        guard let duration = try? ConfigDuration.parse(interval).get(), duration >= .milliseconds(100) else {
            throw ValidationError("--interval '\(interval)' is not a duration of at least 100ms, such as 2s")
        }
        guard URL(string: url)?.scheme?.hasPrefix("http") == true else { throw ValidationError("--url must be an http:// or https:// URL") }
    }

    func run() async throws {
        let pause = (try? ConfigDuration.parse(interval).get()) ?? .seconds(2)
        let scraper = MetricsScraper(listener: url)
        do {
            try await show(scraper, every: pause)
        } catch {
            try? await scraper.shutdown()
            throw error
        }
        try? await scraper.shutdown()
    }

    /// Scrapes and redraws until Ctrl-C, or once with --once.
    private func show(_ scraper: MetricsScraper, every pause: Duration) async throws {
        var previous: MetricsSnapshot?
        while true {
            let current: MetricsSnapshot
            do {
                current = try await scraper.scrape()
            } catch {
                if once {
                    Terminal.error("signet top: cannot read \(scraper.url): \(error)")
                    throw ExitCode.failure
                }
                try Terminal.printLine(Array("\u{1B}[H\u{1B}[2Jsignet top — cannot read \(scraper.url): \(error); trying again".utf8))
                previous = nil
                try await Task.sleep(for: pause)
                continue
            }
            if let previous {
                let lines = TopView(previous: previous, current: current, now: Date().timeIntervalSince1970).lines(source: url)
                // Home and clear, then the frame: a terminal redraws in place.
                let frame = (once ? "" : "\u{1B}[H\u{1B}[2J") + lines.joined(separator: "\n")
                try Terminal.printLine(Array(frame.utf8))
                if once { return }
            }
            previous = current
            try await Task.sleep(for: pause)
        }
    }
}
