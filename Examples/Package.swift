// swift-tools-version:6.1
// Four small programs an embedder of Signet's libraries would copy (docs/embedding.md). CI
// builds and runs them against this checkout (scripts/examples.sh). In your own package,
// depend on Signet by URL instead of the path: .package(url: "https://…/signet", from: "…").
import PackageDescription

let package = Package(
    name: "SignetExamples",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Signet", path: ".."),
        // The webhook example runs in its own ServiceGroup, so it names the lifecycle it uses.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        // Verification alone: SignetJWS (OpenSSL's libcrypto; apt: libssl-dev).
        .executableTarget(name: "VerifyNotification", dependencies: [.product(name: "SignetJWS", package: "Signet")]),
        // The state stages in code, with a typed sink: SignetState (also libsqlite3-dev).
        .executableTarget(name: "EventPipeline", dependencies: [.product(name: "SignetState", package: "Signet")]),
        // The entitlement answer from the store.
        .executableTarget(name: "EntitlementQuery", dependencies: [.product(name: "SignetState", package: "Signet")]),
        // The webhook in your own ServiceGroup: SignetHTTP (Hummingbird, swift-nio).
        .executableTarget(
            name: "WebhookService",
            dependencies: [
                .product(name: "SignetHTTP", package: "Signet"),
                .product(name: "SignetState", package: "Signet"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]),
        // Acceptance tests of the embedding use case, against the public API only (being in
        // another package, nothing else is visible): one import, the state stages and their
        // wiring checks, typed events, the entitlement answer, the webhook in a ServiceGroup.
        .testTarget(
            name: "EmbeddingAcceptanceTests",
            dependencies: [
                .product(name: "SignetJWS", package: "Signet"),
                .product(name: "SignetState", package: "Signet"),
                .product(name: "SignetHTTP", package: "Signet"),
                .product(name: "SignetFixtures", package: "Signet"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]),
    ])
