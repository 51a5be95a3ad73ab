#if canImport(Glibc)
import Glibc
#endif

/// Waits for SIGTERM or SIGINT (and handles SIGHUP). Call `blockTerminationSignals()` first thing in
/// `main`, before any thread starts, so that the signals are delivered only to the thread that waits
/// for them.
public enum Signals {
    public static func blockTerminationSignals() {
        var set = terminationSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
        signal(SIGPIPE, SIG_IGN)
    }

    /// Blocks the calling thread until SIGTERM or SIGINT arrives; returns its number. Each SIGHUP
    /// meanwhile calls `onHangup`.
    public static func waitForTermination(onHangup: () -> Void = {}) -> Int32 {
        var set = terminationSet()
        var received: Int32 = 0
        while true {
            guard sigwait(&set, &received) == 0 else { continue }
            if received == SIGHUP {
                onHangup()
                continue
            }
            return received
        }
    }

    static func terminationSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        sigaddset(&set, SIGHUP)
        return set
    }
}
