import CoordsCore

/// The version line of `coords --version` and `coords-relay --version`: the release, the git
/// commit it was built from, and (for the relay) the schema versions of its stores, so two
/// builds that both say 1.0.0 can be told apart.
public enum BuildVersion {
    /// "1.0.0 (commit 0123456789ab)" — `suffix` (e.g. the relay's schemas) is appended inside
    /// the parentheses.
    public static func line(adding suffix: String? = nil) -> String {
        "\(CoordsVersion.string) (commit \(BuildInfo.commit)\(suffix.map { ", " + $0 } ?? ""))"
    }
}
