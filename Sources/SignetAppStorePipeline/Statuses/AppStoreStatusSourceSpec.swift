package import SignetCore

extension ComponentSpec {
    /// `source: {type: appstore_statuses}`.
    package static let appStoreStatusSource = ComponentSpec(
        name: "appstore_statuses",
        summary: "Apple's current status of listed purchases, from Get All Subscription Statuses (reconcile, seeding)",
        description: """
            For each id, every subscription Apple lists becomes one record as Apple sends it ({"originalTransactionId", \
            "status", "signedTransactionInfo", "signedRenewalInfo"}): decode reads it as a status, verify checks both JWS, \
            and transition applies it as Apple's current view, ordered against notifications by its signedDate and silent \
            where the state already agrees. Ids Apple does not know (4040010) are counted and skipped. The checkpoint keeps \
            how many ids are done; a restart with the same list resumes. `signet reconcile` runs a pipeline with this \
            source (docs/appstore-api.md).
            """,
        fields: [
            ConfigField(
                "original_transaction_ids", .stringList(allowed: nil), .optional,
                "the purchases to ask about (any transaction id of each)", example: "[\"2000000123456789\"]"),
        ] + AppStoreStatusSource.Options.configuration.fields + [
            ConfigField(
                "checkpoint", .string, .default("${SIGNET_DATA_DIR:signet-data}/reconcile.json"),
                "how many ids are done (replaced atomically); an unfinished reconcile of the same list is resumed"),
        ] + AppStoreAPISettings.fields,
        examples: [
            "source:\n  type: appstore_statuses\n  ids_file: /var/lib/signet/purchases.txt"
        ])
}

extension AppStoreStatusSource.Options {
    /// The source's keys that set an option, their defaults the options' own; the id list
    /// and checkpoint (a path with variables, expanded when the source opens) are read apart.
    package static let configuration = ConfigBindings<AppStoreStatusSource.Options>(
        defaults: AppStoreStatusSource.Options(ids: [], checkpointPath: ""),
        [
            ConfigBinding("ids_file", \.idsFile, .string, "a file with one id per line (blank lines and # comments skipped)"),
            ConfigBinding(
                "parallelism", \.parallelism, .int(1...64), "ids asked about at the same time (all within requests_per_second)",
                advanced: true),
        ])
}
