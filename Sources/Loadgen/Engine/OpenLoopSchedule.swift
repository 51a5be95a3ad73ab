/// When each request of an open-loop run is due. The run's requests are numbered 0, 1, 2… and
/// request n is due when the rate, integrated from the start (`RateStages`), reaches n: at n / rate
/// seconds for a constant rate. Connection c of C sends requests c, c + C, c + 2C…, so together the
/// connections start exactly the scheduled requests, evenly spread (wrk2's model). A connection
/// still waiting for a reply sends its overdue requests as soon as it can, and their latency counts
/// from the due time: a stalled server shows as latency instead of being hidden (no coordinated
/// omission).
struct OpenLoopSchedule: Equatable {
    let stages: RateStages
    let connections: Int

    /// A constant `rate` (requests per second, all connections together).
    init(rate: Double, connections: Int) {
        self.init(stages: RateStages(constant: rate, seconds: .infinity), connections: connections)
    }

    init(stages: RateStages, connections: Int) {
        self.stages = stages
        self.connections = connections
    }

    /// Nanoseconds after the start at which connection `connection` sends its `sequence`-th request
    /// (`Int64.max` when the stages end before it).
    func due(connection: Int, sequence: Int64) -> Int64 {
        let number = Double(sequence) * Double(connections) + Double(connection)
        if stages.stages.count == 1, stages.initialRate == stages.stages[0].target, stages.initialRate > 0 {
            // A constant rate: exact in integers of nanoseconds as far as Double carries them.
            let seconds = number / stages.initialRate
            guard seconds < stages.seconds else { return .max }
            return Int64((number * 1e9 / stages.initialRate).rounded(.down))
        }
        guard let seconds = stages.due(number) else { return .max }
        return Int64((seconds * 1e9).rounded(.down))
    }

    /// How many requests of connection `connection` are due before `nanoseconds` after the start.
    func count(connection: Int, before nanoseconds: Int64) -> Int64 {
        guard nanoseconds > 0 else { return 0 }
        // Request n is due before t when n < requests(before: t); the connection's requests are c, c + C, …
        let limit = stages.requests(before: Double(nanoseconds) / 1e9).rounded(.up)
        guard limit > Double(connection) else { return 0 }
        var count = Int64(((limit - Double(connection)) / Double(connections)).rounded(.up))
        // Guard the float arithmetic at the edges with the exact test.
        while count > 0 && due(connection: connection, sequence: count - 1) >= nanoseconds { count -= 1 }
        while due(connection: connection, sequence: count) < nanoseconds { count += 1 }
        return count
    }
}
