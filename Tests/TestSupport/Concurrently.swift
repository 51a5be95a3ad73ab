import Foundation

/// Runs `body(index)` on `count` threads at once and waits up to `timeoutSeconds` for all of them;
/// false when some had not finished by then.
public func runConcurrently(_ count: Int, timeoutSeconds: Double = 60, _ body: @escaping @Sendable (Int) -> Void) -> Bool {
    let done = DispatchGroup()
    for index in 0..<count {
        done.enter()
        Thread {
            body(index)
            done.leave()
        }.start()
    }
    return done.wait(timeout: .now() + timeoutSeconds) == .success
}
