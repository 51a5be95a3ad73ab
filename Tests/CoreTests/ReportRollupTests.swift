import Testing
@testable import Core

@Suite struct ReportRollupTests {
    func fact(screen: String?, currency: String?) -> ReportFact {
        ReportFact(app: 1, day: 0, isEvent: true, name: "PW_ScreenOpen", hwid: "h", screen: screen, sessionDuration: nil, idleSeconds: nil,
                   purchase: currency.map { ($0, 1) })
    }

    /// Screens and currencies key the rollup rows: cut at a NUL (where SQLite's text ends) and at
    /// `maxKeyBytes`, never inside a character.
    @Test func screenAndCurrencyKeysAreCutAtNULAndAtTheirCap() {
        #expect(ReportFact.maxKeyBytes == 256)
        #expect(ReportFact.key("Home") == "Home")
        #expect(ReportFact.key("Home\u{0}Evil") == "Home")
        #expect(ReportFact.key("\u{0}x") == "")
        #expect(ReportFact.key(String(repeating: "a", count: 256)) == String(repeating: "a", count: 256))
        #expect(ReportFact.key(String(repeating: "a", count: 3_000)) == String(repeating: "a", count: 256))
        // 1 + 2 × 127 = 255 bytes fit; the 128th "é" would straddle the limit.
        #expect(ReportFact.key("a" + String(repeating: "é", count: 1_000)) == "a" + String(repeating: "é", count: 127))
        #expect(ReportFact.key("ab" + String(repeating: "😀", count: 100)) == "ab" + String(repeating: "😀", count: 63))

        let capped = fact(screen: String(repeating: "s", count: 300) + "\u{0}", currency: "EUR\u{0}x")
        #expect(capped.screen == String(repeating: "s", count: 256))
        #expect(capped.purchase?.currency == "EUR")
        #expect(fact(screen: nil, currency: nil).screen == nil)
    }

    /// Screens that differ only past the cap or after a NUL count as one.
    @Test func cutKeysAddUp() {
        var rollup = ReportRollup()
        let long = String(repeating: "x", count: 256)
        for screen in [long + "1", long + "2", "Home", "Home\u{0}1"] { rollup.add(fact(screen: screen, currency: nil)) }
        #expect(rollup.statistics.screens == [EventStatistics.Screen(name: "Home", count: 2), EventStatistics.Screen(name: long, count: 2)])
    }

    /// The distinct-device figure is an estimate past the sketch's exact range and may overshoot;
    /// an event never shows more devices than occurrences.
    @Test func anEventNeverHasMoreDevicesThanOccurrences() {
        #expect(EventStatistics.Event(name: "PW_ScreenOpen", count: 10_999, devices: 11_292).devices == 10_999)
        #expect(EventStatistics.Event(name: "PW_ScreenOpen", count: 10_999, devices: 4_000).devices == 4_000)
    }
}
