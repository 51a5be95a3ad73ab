/// What `--version` prints: Herald's version and the git commit the binary was built from (baked
/// in at build time by the GitCommit plugin).
public enum BuildInfo {
    public static let version = "0.3.0"
    public static let commit = gitCommit
    /// `0.3.0 (commit 1a2b3c4d5e6f)`.
    public static var description: String { "\(version) (commit \(commit))" }
}
