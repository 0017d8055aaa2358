public import Foundation

/// Where the read-only test fixtures live: `<package root>/Tests/Fixtures` (in the repository, so a
/// clone alone runs every test; Tests/Fixtures/README.md says where each file came from).
///
/// Located from this file's path so tests work from any working directory.
public enum FixturePaths {
    /// The package root (the directory holding Package.swift).
    public static let packageRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // SignetTestSupport
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()  // package root
        .standardizedFileURL

    /// `<root>/Tests/Fixtures`.
    public static let fixtures: URL = packageRoot
        .appendingPathComponent("Tests/Fixtures", isDirectory: true)
        .standardizedFileURL

    /// Real Apple notifications, transactions and renewal infos, plus Apple's roots.
    public static let appleReal: URL = fixtures.appendingPathComponent("apple-real", isDirectory: true)

    /// Test vectors from Apple's App Store Server Library.
    public static let appleLibraryVectors: URL = fixtures.appendingPathComponent("apple-library-vectors", isDirectory: true)
}
