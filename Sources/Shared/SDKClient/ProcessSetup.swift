#if canImport(Glibc)
import Glibc
#endif

/// What a load generator asks of its process: more descriptors, and whether a person watches.
public enum ProcessSetup {
    /// Lifts the soft limit on open descriptors to the hard one, so that thousands of connections
    /// do not fail with EMFILE.
    public static func raiseOpenFileLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    /// Whether standard output is a terminal (then a live progress line makes sense).
    public static var standardOutputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }
}
