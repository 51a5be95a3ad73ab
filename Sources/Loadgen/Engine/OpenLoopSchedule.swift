/// When each request of an open-loop run is due. The run's requests are numbered 0, 1, 2… and
/// request n is due at n / rate seconds after the start; connection c of C sends requests c, c + C,
/// c + 2C…, so each connection runs at rate / C and together they start exactly `rate` requests a
/// second, evenly spread (wrk2's model). A connection still waiting for a reply sends its overdue
/// requests as soon as it can, and their latency counts from the due time: a stalled server shows
/// as latency instead of being hidden (no coordinated omission).
struct OpenLoopSchedule: Equatable {
    /// Requests per second, all connections together.
    let rate: Double
    let connections: Int

    /// Nanoseconds after the start at which connection `connection` sends its `sequence`-th request.
    func due(connection: Int, sequence: Int64) -> Int64 {
        let number = Double(sequence) * Double(connections) + Double(connection)
        return Int64((number * 1e9 / rate).rounded(.down))
    }

    /// How many requests of connection `connection` are due before `nanoseconds` after the start.
    func count(connection: Int, before nanoseconds: Int64) -> Int64 {
        guard nanoseconds > 0 else { return 0 }
        // Request n is due before t when n < t·rate; the connection's requests are c, c + C, …
        let limit = (Double(nanoseconds) * rate / 1e9).rounded(.up)  // numbers below this are due before t
        guard limit > Double(connection) else { return 0 }
        var count = Int64(((limit - Double(connection)) / Double(connections)).rounded(.up))
        // Guard the float arithmetic at the edges with the exact test.
        while count > 0 && due(connection: connection, sequence: count - 1) >= nanoseconds { count -= 1 }
        while due(connection: connection, sequence: count) < nanoseconds { count += 1 }
        return count
    }
}
