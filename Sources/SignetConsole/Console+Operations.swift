import Foundation
import Hummingbird
import SignetAppStoreAPI
import SignetAppStorePipeline
import SignetCore
import SignetState

// The operations page: what the pipeline did over the last 24 hours (SVG charts), the delivery
// health round trips, refund questions waiting for an answer, and Apple's pauses in force.
extension Console {
    struct RoundTripRow {
        var when: String
        var result: String
        var latency: String
        var detail: String
    }

    struct QuestionRow {
        var transactionId: String
        var originalTransactionId: String
        var requested: String
        var deadline: String
        var status: String
    }

    struct PauseRow {
        var environment: String
        var endpoint: String
        var until: String
    }

    struct OperationsValues {
        var since: String
        var totals: String
        var throughput: SVGChart
        var deadLetters: SVGChart?
        var roundTrips: [RoundTripRow]
        var hasDeliveryHealth: Bool
        var questions: [QuestionRow]
        var questionCount: Int
        var pauses: [PauseRow]
    }

    /// Refund questions the page lists at most.
    static let questionsShown = 50

    func operations(_ session: ConsoleSessions.Session) async -> Response {
        let now = WallClock.milliseconds()
        history.sample(now: now)
        let buckets = history.last24Hours(now: now)
        let marks = buckets.enumerated().compactMap { index, bucket -> (Int, String)? in
            bucket.start % (4 * 3_600_000) == 0 ? (index, String(ConsoleTime.text(bucket.start).dropFirst(11).prefix(5))) : nil
        }
        let throughput = SVGChart.columns(
            title: "Notifications read (blue) and dead-lettered (red) per 10 minutes, last 24 hours, UTC",
            values: buckets.map { bucket in
                (bucket.read, bucket.rejected, "\(ConsoleTime.text(bucket.start)): \(bucket.read) read, \(bucket.passed) passed, \(bucket.rejected) dead-lettered")
            },
            marks: marks)
        var reasons: [String: Int] = [:]
        for bucket in buckets { reasons.merge(bucket.rejectedByReason, uniquingKeysWith: +) }
        let read = buckets.reduce(0) { $0 + $1.read }
        let rejected = buckets.reduce(0) { $0 + $1.rejected }
        do {
            let pending = try await onStore { [store] in
                try store.roles().consumptionRequests(requestedSince: now - 30 * 86_400_000, limit: 100_000).filter { $0.status == .pending }
            }
            let healthFile = deliveryHealthPath()
            let trips = healthFile.flatMap { try? DeliveryHealthFile.read($0) } ?? []
            let values = OperationsValues(
                since: ConsoleTime.text(max(history.since, now - 86_400_000)),
                totals: "\(read) read, \(rejected) dead-lettered in the last 24 hours",
                throughput: throughput,
                deadLetters: reasons.isEmpty ? nil : SVGChart.rows(title: "Dead letters by reason, last 24 hours", reasons.map { ($0.key, $0.value) }),
                roundTrips: trips.reversed().prefix(12).map { trip in
                    RoundTripRow(
                        when: ConsoleTime.text(trip.requestedAt), result: trip.result?.rawValue ?? "waiting",
                        latency: trip.latency.map { "\($0) ms" } ?? "—", detail: trip.detail ?? "")
                },
                hasDeliveryHealth: healthFile != nil,
                questions: pending.sorted { $0.deadline < $1.deadline }.prefix(Self.questionsShown).map { question in
                    QuestionRow(
                        transactionId: question.transactionId, originalTransactionId: question.originalTransactionId ?? "",
                        requested: ConsoleTime.text(question.requestedAt), deadline: ConsoleTime.text(question.deadline), status: question.status.rawValue)
                },
                questionCount: pending.count,
                pauses: AppStoreAPIPauses.current(now: now).map {
                    PauseRow(environment: $0.environment, endpoint: $0.endpoint, until: ConsoleTime.text($0.until))
                })
            return html(.ok, "operations", title: "Operations", session: session, values)
        } catch {
            return storeFailure(error, session)
        }
    }
}
