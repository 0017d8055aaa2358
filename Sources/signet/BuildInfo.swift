import CBuildInfo
import Signet

/// What `signet --version` prints: the version (``Signet/version``, the one place it is
/// set; scripts/package.sh reads it from there), the commit and the build date, which a
/// release build passes in (Sources/CBuildInfo/shim.h).
enum BuildInfo {
    static let commit = String(cString: signet_build_commit())
    static let date = String(cString: signet_build_date())
    static let versionLine = "\(Signet.version) (commit \(commit), built \(date))"
}
