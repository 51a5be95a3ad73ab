@testable import Loadgen
import Testing

/// `--stages`: the rate ramps in straight lines from stage to stage, and the open loop's schedule
/// starts exactly the requests under that curve.
struct RateStagesTests {
    @Test func stagesRampFromWhereThePreviousEnded() throws {
        let stages = try RateStages(parsing: "30s:1000,2m:5000,30s:0")
        #expect(stages.stages == [.init(seconds: 30, target: 1000), .init(seconds: 120, target: 5000), .init(seconds: 30, target: 0)])
        #expect(stages.seconds == 180 && stages.peakRate == 5000 && stages.description == "30s:1000,120s:5000,30s:0")
        #expect(stages.rate(at: 0) == 0 && stages.rate(at: 15) == 500 && stages.rate(at: 90) == 3000 && stages.rate(at: 165) == 2500)
        #expect(stages.rate(at: 180) == 0)
        // The area under the curve: 15,000 + 360,000 + 75,000.
        #expect(stages.totalRequests == 450_000)
        #expect(stages.requests(before: 30) == 15_000)
        // The first request is due at the start, the 15,000th as the first stage ends.
        #expect(stages.due(0) == 0)
        #expect(abs((stages.due(15_000) ?? 0) - 30) < 1e-6)
        #expect(stages.due(450_000) == nil)
    }

    @Test func theScheduleStartsExactlyTheRequestsUnderTheCurve() throws {
        for (text, connections) in [("2s:100,3s:400,1s:0", 7), ("1s:50,1s:50", 3), ("0.5s:1000,2s:10", 64)] {
            let stages = try RateStages(parsing: text)
            let schedule = OpenLoopSchedule(stages: stages, connections: connections)
            let end = Int64(stages.seconds * 1e9)
            var times: [Int64] = []
            for connection in 0..<connections {
                let count = schedule.count(connection: connection, before: end)
                for sequence in 0..<count { times.append(schedule.due(connection: connection, sequence: sequence)) }
                #expect(schedule.due(connection: connection, sequence: count) >= end, "\(text)")
            }
            #expect(times.count == Int(stages.totalRequests.rounded(.up)), "\(text): \(times.count) of \(stages.totalRequests)")
            times.sort()
            // Within each second, as many requests as the rate's area over it (to one request).
            for second in 0..<Int(stages.seconds.rounded(.up)) {
                let inSecond = times.filter { $0 >= Int64(second) * 1_000_000_000 && $0 < Int64(second + 1) * 1_000_000_000 }.count
                let expected = stages.requests(before: Double(second + 1)) - stages.requests(before: Double(second))
                #expect(abs(Double(inSecond) - expected) <= 1, "\(text), second \(second): \(inSecond) vs \(expected)")
            }
        }
    }

    @Test func badStagesSayWhatIsWrong() {
        for (text, message) in [("30s", "DURATION:RATE"), ("30s:abc", "rate must be"), ("soon:5", "--stages must be seconds"),
                                ("10s:0,5s:0", "schedule no request"), ("10s:-5", "rate must be")] {
            do {
                _ = try RateStages(parsing: text)
                Issue.record("\(text) was accepted")
            } catch {
                #expect(error.description.contains(message), "\(text): \(error)")
            }
        }
        #expect(throws: FleetOptions.Problem.self) {
            try FleetOptions.parse(["--target", "http://h:1", "--app", "A", "--devices", "5", "--stages", "5s:10", "--rate", "3"], cores: 2)
        }
        #expect(throws: FleetOptions.Problem.self) {
            try FleetOptions.parse(["--target", "http://h:1", "--app", "A", "--devices", "5", "--stages", "5s:10", "--duration", "5"], cores: 2)
        }
    }

    @Test func stagesSetTheDurationAndTheMode() throws {
        let options = try #require(try FleetOptions.parse(["--target", "http://h:1", "--app", "A", "--devices", "50", "--stages", "2s:10,1s:0"],
                                                          cores: 2))
        #expect(options.durationSeconds == 3 && options.isOpenLoop && options.modeDescription == "open loop in stages 2s:10,1s:0")
        // 15 requests in all: never more connections than that.
        #expect(options.connections == 15)
    }
}
