import ArgumentParser
import Foundation
import SignetKafka

struct DevBrokerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dev-broker",
        abstract: "Runs a local Kafka-protocol broker on 127.0.0.1 for trying the Kafka pipeline.",
        discussion: """
            Starts librdkafka's mock cluster (it speaks the real Kafka protocol; any client such as kcat can use it), creates the topics, prints the bootstrap address ALONE on the first stdout line, and runs until SIGINT/SIGTERM. Data lives in memory only, about 5 MiB per partition.

            Example (two terminals; docs/kafka.md walks through it):
              signet dev-broker --topic appstore-notifications:4 \\
                --topic entitlement-events:4 --topic appstore-dead-letters:1
              SIGNET_KAFKA_BROKERS=127.0.0.1:PORT signet run --pipeline Pipelines/kafka.yaml
            """)

    @Option(help: "How many brokers.")
    var brokers: Int = 1

    @Option(name: .customLong("topic"), help: "A topic to create, as NAME:PARTITIONS (repeatable).")
    var topics: [String] = []

    func validate() throws {
        guard (1...32).contains(brokers) else { throw ValidationError("--brokers must be between 1 and 32") }
        for topic in topics {
            let parts = topic.split(separator: ":")
            guard parts.count == 2, !parts[0].isEmpty, let partitions = Int(parts[1]), (1...10_000).contains(partitions) else {
                throw ValidationError("--topic '\(topic)' must be NAME:PARTITIONS with 1 to 10000 partitions, e.g. notifications:3")
            }
        }
    }

    func run() throws {
        let cluster = try MockCluster(brokers: brokers, tcpNoDelay: true)
        for topic in topics {
            // validate() checked the shape and range.
            let parts = topic.split(separator: ":")
            guard parts.count == 2, let partitions = Int(parts[1]) else { continue }
            try cluster.createTopic(String(parts[0]), partitions: partitions)
        }
        // Unbuffered, so `| head -1` sees the address at once.
        FileHandle.standardOutput.write(Data((cluster.bootstrapServers + "\n").utf8))
        Terminal.note("mock Kafka cluster with \(brokers) broker(s) at \(cluster.bootstrapServers); stop with Ctrl-C")

        // Block until a stop signal; the cluster lives on its own threads meanwhile.
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGINT)
        sigaddset(&signals, SIGTERM)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
        var received: Int32 = 0
        sigwait(&signals, &received)
        cluster.close()
        Terminal.note("stopped")
    }
}
