// swift-tools-version:6.1
// SPDX-License-Identifier: Apache-2.0 (LICENSE): the licence of Swift and of every package Signet links.
import PackageDescription

/// Signet: App Store Server Notifications V2 -> verified entitlement-change events.
///
/// Module map (one concern each):
/// - `SignetCore`      records, Stage/Source/Sink protocols, registry, YAML config, runner
/// - `AppStoreModels`  Codable models of Apple's payloads
/// - `SignetOpenSSL`   thin Swift wrappers over libcrypto (the only crypto in the package)
/// - `SignetJWS`       ES256 + x5c verification, `decode` and `verify` stages
/// - `SignetFixtures`  a private Apple-shaped test PKI and signed sample notifications
/// - `SignetState`     dedupe, subscription state machine, SQLite store, outbox
/// - `SignetKafka`     librdkafka source/sink and the local mock broker
/// - `SignetPostgres`  the PostgreSQL state store (postgres-nio), for several instances
/// - `SignetHTTP`      the `http` webhook source and the service lifecycle (Hummingbird, ServiceLifecycle)
/// - `SignetAppStoreAPI` the App Store Server API client (JWT auth, paging, retries, rate limits; async-http-client)
/// - `SignetAppStorePipeline` the client's sources (history, statuses) and stages (catch-up, reconcile), their checkpoints
/// - `SignetConsole`   the support desk's web console on the operators' listener (sign-in, customer pages, actions)
/// - `SignetTesting`   `signet test`: a pipeline's test cases run against in-memory stores and capturing sinks
/// - `Signet`          everything registered in one registry (what the CLI runs)
extension TargetDependencyCondition {
    /// A dependency of the service modules only: left out of an embedder's resolution with `traits: []`.
    static let whenService = TargetDependencyCondition.when(traits: ["Service"])
}

let package = Package(
    name: "Signet",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "SignetCore", targets: ["SignetCore"]),
        .library(name: "AppStoreModels", targets: ["AppStoreModels"]),
        .library(name: "SignetOpenSSL", targets: ["SignetOpenSSL"]),
        .library(name: "SignetJWS", targets: ["SignetJWS"]),
        .library(name: "SignetFixtures", targets: ["SignetFixtures"]),
        .library(name: "SignetState", targets: ["SignetState"]),
        .library(name: "SignetKafka", targets: ["SignetKafka"]),
        .library(name: "SignetHTTP", targets: ["SignetHTTP"]),
        .library(name: "SignetPostgres", targets: ["SignetPostgres"]),
        .library(name: "SignetAppStoreAPI", targets: ["SignetAppStoreAPI"]),
        .library(name: "SignetAppStorePipeline", targets: ["SignetAppStorePipeline"]),
        .library(name: "SignetTesting", targets: ["SignetTesting"]),
        .library(name: "Signet", targets: ["Signet"]),
        .executable(name: "signet", targets: ["signet"]),
    ],
    // The service's own dependencies (Kafka and HTTP are C and NIO; PostgreSQL; the App Store
    // API client; the CLI) are used under the `Service` trait only, on by default. An embedder of
    // the verify or state libraries alone depends with `traits: []` and resolves three packages
    // (swift-log, swift-metrics, Yams) instead of 28 (docs/embedding.md).
    traits: [
        .trait(
            name: "Service",
            description: "The service modules' dependencies: SignetHTTP, SignetKafka, SignetPostgres, SignetAppStoreAPI and the signet CLI build with it"),
        .default(enabledTraits: ["Service"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // `swift package generate-documentation`: the DocC catalogs of the libraries (scripts/docs.sh).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // The support console's HTML templates (escaped by default; no Node build step).
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
    ],
    targets: [
        // C libraries from Debian packages, each behind a thin Swift wrapper module.
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CRdKafka", pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]),
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CMalloc"),
        // The commit and build date scripts/package.sh writes beside its shim (signet --version).
        .systemLibrary(name: "CBuildInfo"),

        .target(name: "SignetOpenSSL", dependencies: ["COpenSSL"]),
        .target(name: "AppStoreModels"),
        .target(
            name: "SignetCore",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Yams", package: "Yams"),
            ]),
        .target(
            name: "SignetJWS",
            dependencies: [
                "SignetCore", "SignetOpenSSL", "AppStoreModels", .product(name: "Metrics", package: "swift-metrics"),
            ]),
        .target(
            name: "SignetFixtures",
            dependencies: ["SignetCore", "SignetOpenSSL", "AppStoreModels"]),
        .target(
            name: "SignetState",
            dependencies: [
                "SignetCore", "SignetJWS", "SignetOpenSSL", "AppStoreModels", "CSQLite",
                .product(name: "Metrics", package: "swift-metrics"),
            ]),
        .target(
            name: "SignetKafka",
            dependencies: ["SignetCore", "CRdKafka", .product(name: "Metrics", package: "swift-metrics")]),
        // The `postgres` store: state shared by several instances (postgres-nio, no hand-written protocol).
        .target(
            name: "SignetPostgres",
            dependencies: [
                "SignetCore", "SignetState",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .whenService),
                .product(name: "NIOCore", package: "swift-nio", condition: .whenService),
                .product(name: "NIOPosix", package: "swift-nio", condition: .whenService),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .whenService),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // HTTP: the webhook source, the http sink, the admin listener (metrics, health,
        // entitlement API) and the service lifecycle.
        .target(
            name: "SignetHTTP",
            dependencies: [
                "SignetCore", "SignetJWS", "SignetState", "SignetOpenSSL", "SignetAppStorePipeline", "SignetAppStoreAPI", "SignetConsole",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .whenService),
                .product(name: "Prometheus", package: "swift-prometheus", condition: .whenService),
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .whenService),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .whenService),
                .product(name: "UnixSignals", package: "swift-service-lifecycle", condition: .whenService),
                .product(name: "NIOCore", package: "swift-nio", condition: .whenService),
                .product(name: "NIOPosix", package: "swift-nio", condition: .whenService),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .whenService),
                .product(name: "NIOSSL", package: "swift-nio-ssl", condition: .whenService),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: .whenService),
            ]),
        // The App Store Server API client: JWT auth, paging, retries, client-side rate limits.
        // Nothing of the state store: an embedder asking Apple needs no pipeline.
        .target(
            name: "SignetAppStoreAPI",
            dependencies: [
                "SignetCore", "SignetOpenSSL", "SignetJWS", "AppStoreModels",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .whenService),
                .product(name: "NIOCore", package: "swift-nio", condition: .whenService),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: .whenService),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The client's pipeline components: the appstore_history and appstore_statuses sources,
        // the appstore_catch_up and appstore_reconcile stages, their checkpoints.
        .target(
            name: "SignetAppStorePipeline",
            dependencies: [
                "SignetAppStoreAPI", "SignetCore", "SignetState", "SignetOpenSSL", "AppStoreModels",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
            ]),
        // The support console: server-rendered pages on the operators' listener (docs/console.md).
        .target(
            name: "SignetConsole",
            dependencies: [
                "SignetCore", "SignetJWS", "SignetState", "SignetOpenSSL", "SignetAppStoreAPI", "SignetAppStorePipeline", "AppStoreModels",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Hummingbird", package: "hummingbird", condition: .whenService),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: .whenService),
                .product(name: "NIOCore", package: "swift-nio", condition: .whenService),
                .product(name: "Mustache", package: "swift-mustache", condition: .whenService),
            ]),
        // `signet test`: runs a pipeline file's test cases with in-memory stores and capturing sinks.
        .target(
            name: "SignetTesting",
            dependencies: ["SignetCore", .product(name: "Logging", package: "swift-log")]),
        // The production library: no test PKI (SignetFixtures holds private keys).
        .target(
            name: "Signet",
            dependencies: [
                "SignetCore", "SignetJWS", "SignetState", "SignetKafka", "SignetHTTP", "SignetPostgres", "SignetAppStorePipeline",
            ]),
        // The CLI names every module it imports (`signet fixtures` is the one user of SignetFixtures).
        // The HTTP floor of scripts/bench_http.py: the same Hummingbird answering a POST with no pipeline.
        .executableTarget(
            name: "signet-http-floor",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird", condition: .whenService),
                .product(name: "NIOCore", package: "swift-nio", condition: .whenService),
            ],
            path: "Benchmarks/HTTPFloor"),
        .executableTarget(
            name: "signet",
            dependencies: [
                "Signet", "SignetCore", "SignetJWS", "SignetState", "SignetKafka", "SignetHTTP", "SignetOpenSSL", "SignetPostgres",
                "SignetAppStoreAPI", "SignetAppStorePipeline", "AppStoreModels", "SignetFixtures", "SignetTesting", "CMalloc", "CBuildInfo", "SignetConsole",
                .product(name: "ArgumentParser", package: "swift-argument-parser", condition: .whenService),
                .product(name: "Logging", package: "swift-log"),
            ]),

        // Shared test helpers: paths to Tests/Fixtures, temp dirs, running the CLI.
        .target(
            name: "SignetTestSupport",
            dependencies: [
                "SignetCore", "SignetFixtures", "SignetOpenSSL", "AppStoreModels",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .whenService),
                .product(name: "Hummingbird", package: "hummingbird", condition: .whenService),
                .product(name: "HTTPTypes", package: "swift-http-types", condition: .whenService),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .whenService),
            ],
            path: "Tests/SignetTestSupport"),
        .testTarget(name: "AppStoreModelsTests", dependencies: ["AppStoreModels", "SignetTestSupport"]),
        .testTarget(name: "SignetTestingTests", dependencies: ["SignetTesting", "SignetCore", "SignetTestSupport"]),
        .testTarget(
            name: "SignetCoreTests",
            dependencies: [
                "SignetCore", "SignetTestSupport", .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // The wrappers over libcrypto; Apple's root and the test PKI (SignetJWS, SignetFixtures) are what they are tried on.
        .testTarget(name: "SignetOpenSSLTests", dependencies: ["SignetOpenSSL", "SignetJWS", "SignetFixtures", "SignetTestSupport"]),
        .testTarget(
            name: "SignetJWSTests",
            dependencies: ["SignetJWS", "SignetFixtures", "SignetOpenSSL", "SignetTestSupport"]),
        // The state tests' builders and harness (verified payloads without crypto, dedupe + transition
        // over a store, the stores to run on), shared by the state store's tests and PostgreSQL's.
        .target(
            name: "SignetStateTestSupport",
            dependencies: ["SignetState", "SignetPostgres", "SignetJWS", "SignetCore", "AppStoreModels", "SignetTestSupport"],
            path: "Tests/SignetStateTestSupport"),
        .testTarget(
            name: "SignetStateTests",
            dependencies: [
                "SignetState", "SignetStateTestSupport", "SignetJWS", "AppStoreModels", "SignetFixtures", "SignetTestSupport",
            ]),
        // The PostgreSQL store's own code: URL, migrations, the entitlements view, leases, the pool,
        // several instances, outages (the contract every store keeps runs in SignetStateTests).
        .testTarget(
            name: "SignetPostgresTests",
            dependencies: ["SignetPostgres", "SignetState", "SignetStateTestSupport", "SignetCore", "AppStoreModels", "SignetTestSupport"]),
        .testTarget(name: "SignetKafkaTests", dependencies: ["SignetKafka", "SignetTestSupport"]),
        .testTarget(
            name: "SignetHTTPTests",
            dependencies: [
                "SignetHTTP", "Signet", "SignetAppStorePipeline", "SignetCore", "SignetJWS", "SignetOpenSSL", "SignetFixtures", "AppStoreModels", "SignetTestSupport",
                "SignetConsole", "SignetState", "SignetAppStoreAPI", "SignetAppStoreAPITestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .whenService),
                .product(name: "UnixSignals", package: "swift-service-lifecycle", condition: .whenService),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]),
        // The App Store client's test bed (an API key, the fake's matching JWT check, a client of
        // the fake), shared by the client's tests and the pipeline components' tests.
        .target(
            name: "SignetAppStoreAPITestSupport",
            dependencies: [
                "SignetAppStoreAPI", "SignetTestSupport", "SignetJWS", "SignetFixtures", "SignetOpenSSL", "SignetCore",
                "AppStoreModels",
            ],
            path: "Tests/SignetAppStoreAPITestSupport"),
        .testTarget(
            name: "SignetAppStoreAPITests",
            dependencies: [
                "SignetAppStoreAPI", "SignetAppStoreAPITestSupport", "SignetJWS", "SignetOpenSSL", "SignetFixtures",
                "AppStoreModels", "SignetTestSupport", "SignetCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .whenService),
                .product(name: "Logging", package: "swift-log"),
            ]),
        .testTarget(
            name: "SignetAppStorePipelineTests",
            dependencies: [
                "SignetAppStorePipeline", "SignetAppStoreAPI", "SignetAppStoreAPITestSupport", "SignetState", "SignetCore",
                "SignetFixtures", "AppStoreModels", "SignetTestSupport", "SignetStateTestSupport", "SignetJWS", "SignetOpenSSL",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus", condition: .whenService),
            ]),
        .testTarget(name: "SignetCLITests", dependencies: ["Signet", "SignetTestSupport"]),
        // Whole-system tests: the `signet` binary killed mid-batch, Kafka through the mock broker and kcat.
        .testTarget(
            name: "SignetEndToEndTests",
            dependencies: [
                "Signet", "SignetKafka", "SignetState", "SignetPostgres", "SignetFixtures", "AppStoreModels", "CSQLite", "SignetTestSupport",
                "SignetOpenSSL", "SignetCore",
            ]),
    ],
    swiftLanguageModes: [.v6]
)

// Every target: `any` spelled out for existentials, each file imports what it uses, and an
// import is internal unless marked `public import` (what a module re-exposes in its API is
// then visible at the top of the file that does it).
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
        .enableUpcomingFeature("InternalImportsByDefault"),
    ]
}
