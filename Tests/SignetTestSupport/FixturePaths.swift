import Foundation

/// Where the shared, read-only test fixtures live: `<package root>/../shared/fixtures`.
///
/// Located from this file's path so tests work from any working directory.
public enum FixturePaths {
    /// The package root (the directory holding Package.swift).
    public static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // SignetTestSupport
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .standardizedFileURL

    /// `<root>/../shared/fixtures`.
    public static let sharedFixtures: URL = packageRoot
        .deletingLastPathComponent()
        .appendingPathComponent("shared/fixtures", isDirectory: true)
        .standardizedFileURL

    /// Real Apple notifications, transactions and renewal infos, plus Apple's roots.
    public static let appleReal: URL = sharedFixtures.appendingPathComponent("apple-real", isDirectory: true)

    /// Test vectors from Apple's App Store Server Library.
    public static let appleLibraryVectors: URL = sharedFixtures.appendingPathComponent("apple-library-vectors", isDirectory: true)
}
