// swift-tools-version:6.1
import PackageDescription

/// The libFuzzer target over Signet's input path (docs/fuzzing.md). A package of its own so
/// the main package's `swift build` never compiles it; scripts/fuzz.sh builds it with
/// `-sanitize=fuzzer` into its own scratch path.
///
/// The root package is a path dependency; its identity is the name of its directory (which
/// differs between clones and worktrees), so it is read from this file's location.
let rootIdentity = String(#filePath.split(separator: "/").dropLast(3).last ?? "signet").lowercased()

let package = Package(
    name: "SignetFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../.."),
    ],
    targets: [
        .target(name: "CLibFuzzer"),
        .executableTarget(
            name: "SignetFuzz",
            dependencies: [
                "CLibFuzzer",
                .product(name: "AppStoreModels", package: rootIdentity),
                .product(name: "SignetCore", package: rootIdentity),
                .product(name: "SignetFixtures", package: rootIdentity),
                .product(name: "SignetJWS", package: rootIdentity),
                .product(name: "SignetOpenSSL", package: rootIdentity),
                .product(name: "SignetState", package: rootIdentity),
            ],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
