import Dispatch
import Core
import StoreCore

/// getTags of many devices in one statement. Each call is one round trip to the server otherwise,
/// and a round trip costs the server more than the lookup itself: the calls that arrive while a
/// statement runs wait, and the next statement reads all of them.
///
/// A call either blocks its caller (on the store's reader threads) or hands an answer to call
/// later (from an HTTP I/O thread, which must not wait). A call that finds fewer than
/// `maximumStatements` statements running starts one, for its own device and every waiting call of
/// the same application, up to `maximumBatch`: a blocked caller on its own thread, an answer-only
/// call on a driver thread. When a statement is done, the turn goes to the longest-waiting call
/// left, if any: a blocked caller is woken to run the next statement, and an answer-only call's
/// statement runs on the same driver thread (a blocked caller returns with its answer first, and
/// hands that statement to a driver thread). The driver threads are the batcher's own, one per
/// statement that may run, so a turn handed to an answer-only call never waits for a reader thread
/// that may itself be blocked waiting for a turn. A call is either waiting or in exactly one
/// statement, so each gets one answer. Every statement is one snapshot, as the single-device read was; a
/// device the store does not hold has no tags.
final class TagReadBatcher: Sendable {
    /// Statements in flight at most, each on a pooled connection.
    static let maximumStatements = 2
    /// Devices in one statement at most.
    static let maximumBatch = 256

    typealias Answer = @Sendable (Result<[String: TagValue], StoreError>) -> Void

    /// One call. `@unchecked Sendable` invariant: `outcome` is written only while the call is in no
    /// other thread's hands (under the batcher's lock when it is handed a turn, or by the one
    /// statement that took it), then `done` is signalled; its caller reads it after `done`. A call
    /// with an `answer` has no caller waiting: the statement that took it calls `answer` instead.
    final class Call: @unchecked Sendable {
        let appID: Int64
        let hwid: String
        let answer: Answer?
        let done = DispatchSemaphore(value: 0)
        var outcome = Outcome.waiting

        init(appID: Int64, hwid: String, answer: Answer? = nil) {
            self.appID = appID
            self.hwid = hwid
            self.answer = answer
        }
    }

    enum Outcome {
        case waiting
        /// Run the next statement.
        case turn
        case tags([String: TagValue])
        case failed(StoreError)
    }

    private struct State {
        var waiting: [Call] = []
        var running = 0
    }

    private let state = Lock(State())
    private let database: PostgresDatabase
    /// Where answer-only calls' statements run.
    private let drivers = RequestRunner(threads: maximumStatements, name: "pg-tags")

    init(database: PostgresDatabase) { self.database = database }

    deinit { drivers.stop() }

    /// The tags of the application's device, read with those of other waiting calls.
    func tags(appID: Int64, hwid: String) throws(StoreError) -> [String: TagValue] {
        // On a batch lane this throws, and the request runs again on a request thread: a lane must
        // neither wait for a read nor run one whose failure would answer other callers.
        try database.collector.refuseDatabaseAccess()
        let call = Call(appID: appID, hwid: hwid)
        var batch = start(call)
        if batch == nil {
            call.done.wait()
            if case .turn = call.outcome {
                batch = [call] + state.withLock { Self.take(from: &$0.waiting, appID: appID) }
            }
        }
        if let batch {
            run(batch)
            if let next = handOn() { drivers.enqueue { [self] in drive(next) } }
        }
        switch call.outcome {
        case .tags(let tags): return tags
        case .failed(let error): throw error
        case .waiting, .turn: throw StoreError.invalid("getTags got no answer")
        }
    }

    /// The same read without a waiting caller: `answer` hears the tags (or why not) from the driver
    /// thread that read them.
    func tags(appID: Int64, hwid: String, answer: @escaping Answer) {
        if let batch = start(Call(appID: appID, hwid: hwid, answer: answer)) {
            drivers.enqueue { [self] in drive(batch) }
        }
    }

    /// The batch `call` starts (it and the waiting calls of its application) when fewer than
    /// `maximumStatements` statements run; nil when it waits instead.
    private func start(_ call: Call) -> [Call]? {
        state.withLock { state in
            guard state.running < Self.maximumStatements else {
                state.waiting.append(call)
                return nil
            }
            state.running += 1
            return [call] + Self.take(from: &state.waiting, appID: call.appID)
        }
    }

    /// Runs `first`, then the next batches for as long as the turn stays on this thread.
    private func drive(_ first: [Call]) {
        var batch = first
        while true {
            run(batch)
            guard let next = handOn() else { return }
            batch = next
        }
    }

    /// Gives the turn of a finished statement to the longest-waiting call: a blocked caller is woken
    /// to run its statement (nil), an answer-only call's batch is returned to be run by the caller of
    /// this. With no call waiting, one statement fewer runs (nil).
    private func handOn() -> [Call]? {
        state.withLock { state in
            guard !state.waiting.isEmpty else {
                state.running -= 1
                return nil
            }
            let next = state.waiting.removeFirst()
            guard next.answer != nil else {
                next.outcome = .turn
                next.done.signal()
                return nil
            }
            return [next] + Self.take(from: &state.waiting, appID: next.appID)
        }
    }

    /// Removes and returns the waiting calls of `appID`, oldest first, as many as fit in a
    /// statement beside the caller's own.
    private static func take(from waiting: inout [Call], appID: Int64) -> [Call] {
        var taken: [Call] = []
        var kept: [Call] = []
        for call in waiting {
            if call.appID == appID && taken.count < maximumBatch - 1 { taken.append(call) } else { kept.append(call) }
        }
        waiting = kept
        return taken
    }

    /// Reads the batch's devices in one statement and answers every call in it, on a connection where
    /// the statement is planned once (the server would otherwise plan it again for each batch size,
    /// which costs more than the reads). Each device's tags are read by their primary key whatever
    /// the statistics say: the lateral subquery is not merged into a join (`OFFSET 0`), since with
    /// statistics from when the table was small the planner chooses a hash join over all of
    /// device_tags.
    private func run(_ batch: [Call]) {
        let outcome: (String) -> Outcome
        do {
            let rows = try database.read(genericPlans: true) { connection in
                try connection.rows(
                    """
                    SELECT d.hwid, t.name, t.type, t.num::text, t.str FROM devices d
                    CROSS JOIN LATERAL (SELECT name, type, num, str FROM device_tags WHERE device_id = d.id OFFSET 0) t
                    WHERE d.app_id = $1 AND d.hwid = ANY($2::text[])
                    """,
                    [.integer(batch[0].appID), .texts(batch.map(\.hwid))]
                ) { row in (row.text(0), row.text(1), TagValue.fromStorage(row, typeColumn: 2)) }
            }
            var tags: [String: [String: TagValue]] = [:]
            for (hwid, name, value) in rows { tags[hwid, default: [:]][name] = value }
            outcome = { .tags(tags[$0] ?? [:]) }
        } catch {
            outcome = { _ in .failed(error) }
        }
        // Answers go to a few I/O loops: each is woken once, with all of its answers.
        Wakeup.deferringSignals {
            for call in batch {
                let result = outcome(call.hwid)
                guard let answer = call.answer else {
                    call.outcome = result
                    call.done.signal()
                    continue
                }
                switch result {
                case .tags(let tags): answer(.success(tags))
                case .failed(let error): answer(.failure(error))
                case .waiting, .turn: answer(.failure(.invalid("getTags got no answer")))
                }
            }
        }
    }
}
