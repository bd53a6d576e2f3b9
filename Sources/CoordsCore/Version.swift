/// The one version of CoordsCore: the library, the C ABI (`coords_version()`), the CLI
/// (`coords --version`), the relay (`coords-relay --version`, the `coords_relay_build_info`
/// metric) and the Python package (`coordscore.__version__`) all report it. The repository's
/// `VERSION` file holds the same string (a test checks they agree); CHANGELOG.md lists releases.
public enum CoordsVersion {
    /// Semantic version of this release.
    public static let string = "1.0.0"
    /// The major version of the C ABI (`COORDS_ABI_VERSION`, the `libcoordscore.so.N` SONAME).
    public static let abiMajor: UInt32 = 1
}
