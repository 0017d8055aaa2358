/// Where Signet keeps its files: `$SIGNET_DATA_DIR`, else `signet-data` (relative to the
/// working directory), as the default pipelines say (`${SIGNET_DATA_DIR:signet-data}`).
package enum DataDirectory {
    /// The directory `environment` names (an empty value counts as unset).
    package static func path(environment: [String: String]) -> String {
        environment["SIGNET_DATA_DIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "signet-data"
    }

    /// The file `name` in that directory.
    package static func file(_ name: String, environment: [String: String]) -> String {
        path(environment: environment) + "/" + name
    }
}
