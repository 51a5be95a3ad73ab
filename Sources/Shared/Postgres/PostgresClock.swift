import Foundation
import Synchronization
import Core

/// The database server's clock, read in this process: this host's wall clock (`local`) plus its
/// offset to the server's. Ingests and workers on several hosts write and compare times in the
/// database (shard leases, the dispatcher role, `created_at`); on this clock they all go by one
/// time base, whatever their own clocks say.
///
/// The offset is measured when the clock is made, from a few round trips (the shortest wins, the
/// server's time taken as read halfway through it), and again once `remeasureSeconds` have
/// passed, on a thread of its own that the first reading after that starts: readers never wait
/// for the server, and a measurement that fails (the server unreachable) keeps the last offset.
/// An offset beyond a second is logged (a warning beyond 10 s, which usually means a broken NTP),
/// and again when it moves by more than a second.
final class PostgresClock: Clock {
    /// How often the offset is measured again.
    static let remeasureSeconds = 60.0
    /// Round trips per measurement.
    static let samples = 5

    private let local: any Clock
    private let database: PostgresDatabase
    private let logger: Logger
    private let remeasureSeconds: Double
    /// The server's time minus `local`'s, in microseconds.
    private let offsetMicroseconds: Atomic<Int64>
    /// When the next measurement is due, in milliseconds of `monotonicSeconds()`.
    private let dueMilliseconds = Atomic<Int64>(0)
    /// True while a measurement runs, so that one runs at a time.
    let measuring = Atomic<Bool>(false)
    /// The offset last logged: none yet, so an offset under a second is not worth a line.
    private let loggedOffset = Lock<Double>(0)

    /// Measures the offset (throws when the server cannot be read) and logs it if it is large.
    init(database: PostgresDatabase, local: any Clock, logger: Logger,
                remeasureSeconds: Double = PostgresClock.remeasureSeconds) throws(StoreError) {
        self.local = local
        self.database = database
        self.logger = logger
        self.remeasureSeconds = remeasureSeconds
        let offset = try Self.measureOffset(database, local: local)
        offsetMicroseconds = Atomic(Self.microseconds(offset))
        noteOffset(offset)
        scheduleNextMeasurement()
    }

    func now() -> Int64 { Int64(preciseNow().rounded(.down)) }

    func preciseNow() -> Double {
        remeasureIfDue()
        return local.preciseNow() + offset
    }

    /// The server's time minus this host's, in seconds, as last measured.
    var offset: Double { Double(offsetMicroseconds.load(ordering: .relaxed)) / 1e6 }

    /// Measures the offset again and keeps it, or keeps the last one when the server cannot be
    /// read; true when it was measured. Blocks for the round trips: a connect timeout at most while
    /// the server is down, the connection's TCP timeouts when it stalls.
    @discardableResult
    func measure() -> Bool {
        defer { scheduleNextMeasurement() }
        do {
            let offset = try Self.measureOffset(database, local: local)
            offsetMicroseconds.store(Self.microseconds(offset), ordering: .relaxed)
            noteOffset(offset)
            return true
        } catch {
            logger.debug("the database server's clock could not be read; the last offset stays",
                         ["clock.offset_seconds": Self.format(offset), "error": "\(error)"])
            return false
        }
    }

    /// Starts a measurement on a thread of its own when one is due and none runs.
    private func remeasureIfDue() {
        guard Self.milliseconds(monotonicSeconds()) >= dueMilliseconds.load(ordering: .relaxed),
              measuring.compareExchange(expected: false, desired: true, ordering: .acquiring).exchanged else { return }
        let thread = Thread(named: "pg-clock") { [self] in
            measure()
            measuring.store(false, ordering: .releasing)
        }
        thread.start()
    }

    private func scheduleNextMeasurement() {
        dueMilliseconds.store(Self.milliseconds(monotonicSeconds() + remeasureSeconds), ordering: .relaxed)
    }

    private func noteOffset(_ offset: Double) {
        let moved = loggedOffset.withLock { logged in
            guard abs(offset - logged) > 1 else { return false }
            logged = offset
            return true
        }
        guard moved else { return }
        let metadata: KeyValuePairs<String, String> = ["clock.offset_seconds": Self.format(offset)]
        if abs(offset) > 10 {
            logger.warning("this host's clock is far from the database server's (is NTP working here or there?); Herald goes by the server's",
                           metadata)
        } else {
            logger.info("this host's clock differs from the database server's; Herald goes by the server's", metadata)
        }
    }

    /// The server's time minus `local`'s, in seconds, from the round trip that took least time.
    static func measureOffset(_ database: PostgresDatabase, local: any Clock) throws(StoreError) -> Double {
        try database.read { connection in
            var best: (roundTrip: Double, offset: Double)?
            for _ in 0..<samples {
                let sent = local.preciseNow()
                let result = try connection.query("SELECT extract(epoch FROM clock_timestamp())::float8", [])
                let received = local.preciseNow()
                let server = result[0].double(0)
                let roundTrip = received - sent
                if roundTrip < best?.roundTrip ?? .infinity { best = (roundTrip, server - (sent + received) / 2) }
            }
            return best?.offset ?? 0
        }
    }

    private static func microseconds(_ seconds: Double) -> Int64 { Int64((seconds * 1e6).rounded()) }
    private static func milliseconds(_ seconds: Double) -> Int64 { Int64((seconds * 1e3).rounded()) }
    private static func format(_ seconds: Double) -> String { String(format: "%.3f", seconds) }
}
