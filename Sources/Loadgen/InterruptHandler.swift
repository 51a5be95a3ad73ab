import Core
import Foundation

/// Ctrl-C (or SIGTERM) once ends the run early (replies in flight still count, and the results are
/// printed and written); a second time drops the replies still awaited.
enum InterruptHandler {
    /// Call after `Signals.blockTerminationSignals()` (first thing in main), so the signals reach
    /// only this thread.
    static func start(_ control: RunControl) {
        let thread = Thread(named: "signals") {
            _ = Signals.waitForTermination()
            control.stop()
            _ = Signals.waitForTermination()
            control.abort()
        }
        thread.start()
    }
}
