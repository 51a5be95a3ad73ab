/// What `--version` prints: Herald's version (the package's `VERSION` file) and the git commit the
/// binary was built from, both baked in at build time by the GitCommit plugin.
public enum BuildInfo {
    public static let version = heraldVersion
    public static let commit = gitCommit
    /// `0.4.0 (commit 1a2b3c4d5e6f)`.
    public static var description: String { "\(version) (commit \(commit))" }
}
