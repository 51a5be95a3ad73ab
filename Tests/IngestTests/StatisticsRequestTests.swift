import Testing
@testable import Ingest
import Core

/// getMsgStats / getAppStats request ids and the buckets of getResults.
@Suite struct StatisticsRequestTests {
    @Test func requestIDsCarryTheirParametersAndOthersAreUnknown() {
        let requests = [StatisticsRequest(.message("8F3A-1C2D3E4F-5A6B7C8D")),
                        StatisticsRequest(.application("ABCDE-12345", from: -5, to: 1_772_928_000))]
        for request in requests {
            #expect(StatisticsRequest(id: request.id) == request)
            #expect(!request.id.contains("=") && !request.id.contains("+") && !request.id.contains("/"))
        }
        for garbage in ["", "not-a-request", "eyJ4IjoxfQ", "e30", String(repeating: "A", count: 600), "%%%"] {
            #expect(StatisticsRequest(id: garbage) == nil, "\(garbage)")
        }
    }

    @Test func theFormatterFollowsThePeriodsLengthAsPushwooshDoes() {
        let cases: [(Int64, StatisticsFormatter)] = [
            (0, .minutely), (3 * 3_600, .minutely), (3 * 3_600 + 1, .hourly), (86_400, .hourly), (86_401, .daily),
            (31 * 86_400, .daily), (31 * 86_400 + 1, .monthly), (365 * 86_400, .monthly), (365 * 86_400 + 1, .yearly),
        ]
        for (seconds, expected) in cases { #expect(StatisticsFormatter(period: seconds) == expected, "\(seconds)") }
    }

    @Test func rowsSumTheMinutesOfEachBucketInTimeOrder() throws {
        let march20 = try #require(TagDate.parse("2026-03-20 10:17:00"))
        let counts = [ActivityCount(minute: march20, action: "open", count: 2), ActivityCount(minute: march20, action: "send", count: 5),
                      ActivityCount(minute: march20 + 3_600 * 30, action: "send", count: 1),
                      ActivityCount(minute: march20 + 60, action: "send", count: 4)]
        let actions = ["send", "delivery", "open"]
        #expect(StatisticsFormatter.hourly.rows(counts, actions: actions) == [
            ["datetime": "2026-03-20 10:00:00", "action": "send", "count": 9],
            ["datetime": "2026-03-20 10:00:00", "action": "open", "count": 2],
            ["datetime": "2026-03-21 16:00:00", "action": "send", "count": 1],
        ])
        #expect(StatisticsFormatter.monthly.rows(counts, actions: actions) == [
            ["datetime": "2026-03-01 00:00:00", "action": "send", "count": 10],
            ["datetime": "2026-03-01 00:00:00", "action": "open", "count": 2],
        ])
        #expect(StatisticsFormatter.yearly.bucket(march20) == TagDate.parse("2026-01-01"))
        #expect(StatisticsFormatter.daily.bucket(march20) == TagDate.parse("2026-03-20"))
        #expect(StatisticsFormatter.minutely.bucket(march20 + 59) == march20)
    }
}
