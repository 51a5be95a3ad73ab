import Core

/// Whether a database's commits fail, and who hears when that changes (`/healthz`, the log, the
/// metrics). The backend notes the outcome of each commit; watchers are called once per change
/// between failing and succeeding, not once per commit.
public final class CommitHealth: Sendable {
    private let failure = Lock<String?>(nil)
    private let watchers = Lock<[@Sendable (String?) -> Void]>([])

    public init() {}

    /// Why commits fail, while they do; nil while they succeed.
    public var commitFailure: String? { failure.withLock { $0 } }

    /// Calls `handler` on each change between failing and succeeding commits (with the error, or nil).
    public func watch(_ handler: @escaping @Sendable (String?) -> Void) {
        watchers.withLock { $0.append(handler) }
    }

    /// Notes the outcome of a commit: `error` when it failed, nil when it succeeded.
    public func note(_ error: String?) {
        let changed = failure.withLock { current -> Bool in
            defer { current = error }
            return (current == nil) != (error == nil)
        }
        guard changed else { return }
        for watcher in watchers.withLock({ $0 }) { watcher(error) }
    }
}
