import Foundation
import Core

/// Signed-in dashboard sessions, kept in ingest's memory: a random id (the cookie) → the application
/// it was opened for. A session ends after `idleSeconds` without a request, on sign-out, or when
/// ingest restarts. At most `capacity` live at once (the least recently used goes first).
final class DashboardSessions: Sendable {
    static let idleSeconds = 1800.0
    static let capacity = 10_000

    private let sessions = Lock<[String: (app: String, lastSeen: Double)]>([:])

    /// Opens a session for `app`; returns its id (256 random bits, hex).
    func open(app: String, now: Double) -> String {
        var generator = SystemRandomNumberGenerator()
        let id = (0..<4).map { _ in String(format: "%016llx", generator.next() as UInt64) }.joined()
        sessions.withLock { sessions in
            if sessions.count >= Self.capacity, let oldest = sessions.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key {
                sessions[oldest] = nil
            }
            sessions[id] = (app, now)
        }
        return id
    }

    /// The application of a live session, refreshing its idle clock; nil when unknown or expired.
    func app(of id: String, now: Double) -> String? {
        sessions.withLock { sessions in
            guard let session = sessions[id] else { return nil }
            guard now - session.lastSeen < Self.idleSeconds else {
                sessions[id] = nil
                return nil
            }
            sessions[id] = (session.app, now)
            return session.app
        }
    }

    func close(_ id: String) {
        _ = sessions.withLock { $0.removeValue(forKey: id) }
    }
}

/// Failed dashboard sign-ins per client address: after `allowed` failures within `windowSeconds`,
/// further attempts from that address are refused until the window ends.
final class SignInThrottle: Sendable {
    static let allowed = 5
    static let windowSeconds = 60.0

    private let failures = Lock<[String: (count: Int, since: Double)]>([:])

    /// Seconds the address must wait, or nil when it may try.
    func wait(for address: String, now: Double) -> Double? {
        failures.withLock { failures in
            guard let entry = failures[address] else { return nil }
            let left = Self.windowSeconds - (now - entry.since)
            guard left > 0 else {
                failures[address] = nil
                return nil
            }
            return entry.count >= Self.allowed ? left : nil
        }
    }

    /// Counts a failure; returns how many the address has in the current window.
    @discardableResult
    func failed(_ address: String, now: Double) -> Int {
        failures.withLock { failures in
            var entry = failures[address] ?? (0, now)
            if now - entry.since >= Self.windowSeconds { entry = (0, now) }
            entry.count += 1
            failures[address] = entry
            if failures.count > 100_000 { failures = failures.filter { now - $0.value.since < Self.windowSeconds } }
            return entry.count
        }
    }
}
