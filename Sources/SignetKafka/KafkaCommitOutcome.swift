import CRdKafka

/// How a failed offset commit is handled: sent again after a backoff, or left alone.
///
/// The retriable set follows librdkafka's own handling of OffsetCommit answers (it retries
/// or refreshes the coordinator on these): a rebalance in progress, a coordinator that is
/// loading, moving or unreachable, a timeout or a broken connection. Everything else
/// (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, authorization, ...) will not pass by waiting: the
/// member rejoins and its partitions are revoked, or an operator must act.
enum KafkaCommitOutcome {
    static func isRetriable(_ error: rd_kafka_resp_err_t) -> Bool {
        switch error {
        case RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS, RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS,
            RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
            RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION,
            RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART,
            RD_KAFKA_RESP_ERR__TIMED_OUT, RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__WAIT_COORD,
            RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
            true
        default:
            false
        }
    }
}
