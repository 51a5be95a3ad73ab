@testable import Loadgen
import Testing

/// The open loop's schedule: when each connection's requests are due.
struct OpenLoopScheduleTests {
    @Test func requestsAreSpreadEvenlyAcrossConnections() {
        let schedule = OpenLoopSchedule(rate: 1000, connections: 4)
        // Request n of the run is due at n ms; connection c sends n = c, c + 4, c + 8…
        #expect(schedule.due(connection: 0, sequence: 0) == 0)
        #expect(schedule.due(connection: 1, sequence: 0) == 1_000_000)
        #expect(schedule.due(connection: 3, sequence: 0) == 3_000_000)
        #expect(schedule.due(connection: 0, sequence: 1) == 4_000_000)
        #expect(schedule.due(connection: 2, sequence: 10) == 42_000_000)
        // Merged, the connections' due times are exactly 1 ms apart.
        var times: [Int64] = []
        for connection in 0..<4 {
            for sequence in 0..<250 { times.append(schedule.due(connection: connection, sequence: Int64(sequence))) }
        }
        times.sort()
        for (index, time) in times.enumerated() { #expect(time == Int64(index) * 1_000_000) }
    }

    @Test func theRateHoldsOverTheRunWhateverItsSize() {
        for (rate, connections, seconds) in [(1000.0, 64, 10.0), (333.0, 7, 3.0), (12_345.0, 100, 2.5), (1.5, 3, 4.0)] {
            let schedule = OpenLoopSchedule(rate: rate, connections: connections)
            let end = Int64(seconds * 1e9)
            let total = (0..<connections).reduce(Int64(0)) { $0 + schedule.count(connection: $1, before: end) }
            // Requests 0 ..< rate·seconds are due before the end.
            #expect(total == Int64((rate * seconds).rounded(.up)), "rate \(rate), \(connections) connections, \(seconds) s")
        }
    }

    @Test func countBeforeMatchesTheDueTimes() {
        let schedule = OpenLoopSchedule(rate: 777, connections: 9)
        for connection in 0..<9 {
            for end in [Int64(0), 1, 5_000_000, 11_583_011, 1_000_000_000, 2_000_000_001] {
                let count = schedule.count(connection: connection, before: end)
                if count > 0 { #expect(schedule.due(connection: connection, sequence: count - 1) < end) }
                #expect(schedule.due(connection: connection, sequence: count) >= end)
            }
        }
    }

    @Test func dueTimesStayExactForLongRuns() {
        // A day at 50,000 req/s: the last request is still placed to the nanosecond.
        let schedule = OpenLoopSchedule(rate: 50_000, connections: 64)
        let last = Int64(86_400 * 50_000 / 64)
        #expect(schedule.due(connection: 0, sequence: last) == Int64(86_400) * 1_000_000_000)
    }
}
