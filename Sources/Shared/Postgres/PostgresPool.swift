import Foundation
import Core

/// Whether a server can be reached, as the pools connecting to it found: while it cannot, new
/// connections are attempted at most once per back-off (100 ms doubling to 5 s), and calls in
/// between fail at once with the last error. Shared by the pools of one server, so that a
/// connection any of them opens ends the back-off of all.
final class PostgresReachability: Sendable {
    private struct State {
        var lastFailure: PostgresError?
        var retryAt: ContinuousClock.Instant?
        var backoff: Duration = .milliseconds(100)
    }

    static let maximumBackoff: Duration = .seconds(5)

    private let state = Lock(State())

    /// The last failure to connect, while its back-off runs.
    var waiting: PostgresError? {
        state.withLock { state in
            guard let retryAt = state.retryAt, ContinuousClock.now < retryAt else { return nil }
            return state.lastFailure
        }
    }

    func connected() {
        state.withLock { state in
            state.lastFailure = nil
            state.retryAt = nil
            state.backoff = .milliseconds(100)
        }
    }

    func failed(_ error: PostgresError) {
        state.withLock { state in
            state.lastFailure = error
            state.retryAt = ContinuousClock.now + state.backoff
            state.backoff = min(state.backoff * 2, Self.maximumBackoff)
        }
    }
}

/// A small pool of connections to one server, shared by the stores of a process.
///
/// Connections open on demand, up to `capacity`; a caller that finds them all busy waits at most
/// `acquireTimeout` and then fails with a retryable error. A connection that broke is closed on
/// release, and the pool's generation moves on, so that the idle connections opened before the
/// break (which a server restart killed too) are closed instead of being handed out to fail once
/// each. While the server cannot be reached (`reachability`), calls fail at once with the last
/// error, so that requests get a prompt 503 instead of each waiting for a connect timeout.
final class PostgresPool: Sendable {
    private struct Idle {
        let connection: PostgresConnection
        let generation: Int
    }

    private struct State {
        var idle: [Idle] = []
        var open = 0
        var generation = 0
    }

    let settings: PostgresConnectionSettings
    let capacity: Int
    let acquireTimeout: Duration
    let reachability: PostgresReachability
    private let state = Lock(State())
    /// One permit per connection the pool may hand out.
    private let permits: DispatchSemaphore

    init(settings: PostgresConnectionSettings, capacity: Int, acquireTimeout: Duration,
         reachability: PostgresReachability = PostgresReachability()) {
        self.settings = settings
        self.capacity = capacity
        self.acquireTimeout = acquireTimeout
        self.reachability = reachability
        permits = DispatchSemaphore(value: capacity)
    }

    deinit {
        state.withLock { state in
            for idle in state.idle { idle.connection.close() }
            state.idle.removeAll()
        }
    }

    /// A connection for the caller's exclusive use until `release`; opens one when none is idle.
    func acquire() throws(PostgresError) -> (PostgresConnection, generation: Int) {
        let seconds = Double(acquireTimeout.components.seconds) + Double(acquireTimeout.components.attoseconds) / 1e18
        guard permits.wait(timeout: .now() + seconds) == .success else {
            throw PostgresError(sqlState: "53300", message: "all \(capacity) connections of the pool stayed busy",
                                context: "waiting for a database connection")
        }
        enum Next { case use(PostgresConnection, Int), connect(Int), fail(PostgresError) }
        let next = state.withLock { state -> Next in
            while let idle = state.idle.popLast() {
                if idle.generation == state.generation { return .use(idle.connection, idle.generation) }
                idle.connection.close()
                state.open -= 1
            }
            if let failure = reachability.waiting { return .fail(failure) }
            state.open += 1
            return .connect(state.generation)
        }
        switch next {
        case .use(let connection, let generation):
            return (connection, generation)
        case .fail(let failure):
            permits.signal()
            throw failure
        case .connect(let generation):
            do {
                let connection = try PostgresConnection(settings)
                reachability.connected()
                return (connection, generation)
            } catch {
                state.withLock { $0.open -= 1 }
                reachability.failed(error)
                permits.signal()
                throw error
            }
        }
    }

    /// Hands a connection back. One that broke, or that was left inside a transaction, is closed.
    func release(_ connection: PostgresConnection, generation: Int) {
        state.withLock { state in
            if connection.isHealthy && !connection.inTransaction && generation == state.generation {
                state.idle.append(Idle(connection: connection, generation: generation))
            } else {
                if !connection.isHealthy && generation == state.generation { state.generation += 1 }
                connection.close()
                state.open -= 1
            }
        }
        permits.signal()
    }
}
