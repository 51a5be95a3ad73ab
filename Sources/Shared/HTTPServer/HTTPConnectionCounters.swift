import Synchronization

/// What the server did with connections, for `/metrics`: how many are open, how many it cut off
/// for missing a deadline, evicted or refused at `http.connection_limit`. Created by the owner and
/// handed to `HTTPServer`, so that whatever renders metrics can hold it before the server exists.
public final class HTTPConnectionCounters: Sendable {
    private let open = Atomic<Int>(0)
    private let cutHeaders = Atomic<Int>(0)
    private let cutBody = Atomic<Int>(0)
    private let evicted = Atomic<Int>(0)
    private let refused = Atomic<Int>(0)

    public init() {}

    /// One reading of every counter.
    public struct Snapshot: Sendable, Equatable {
        public var open: Int
        /// Connections shut down for missing the header deadline.
        public var cutHeaders: Int
        /// Connections shut down for missing the body deadline.
        public var cutBody: Int
        /// Connections waiting for headers, shut down to make room for a new one at the limit.
        public var evicted: Int
        /// Requests answered 503 because every slot held a request in progress.
        public var refused: Int
    }

    public var snapshot: Snapshot {
        Snapshot(open: open.load(ordering: .relaxed), cutHeaders: cutHeaders.load(ordering: .relaxed),
                 cutBody: cutBody.load(ordering: .relaxed), evicted: evicted.load(ordering: .relaxed),
                 refused: refused.load(ordering: .relaxed))
    }

    func opened() { open.add(1, ordering: .relaxed) }
    func closed() { open.subtract(1, ordering: .relaxed) }
    func countCut(_ cut: ConnectionTable.Cut) {
        switch cut {
        case .headers: cutHeaders.add(1, ordering: .relaxed)
        case .body: cutBody.add(1, ordering: .relaxed)
        }
    }
    func countEvicted() { evicted.add(1, ordering: .relaxed) }
    func countRefused() { refused.add(1, ordering: .relaxed) }
}
