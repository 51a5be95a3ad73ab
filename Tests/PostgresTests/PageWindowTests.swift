import Testing
@testable import Postgres

/// The window a page that reads tag rows reads: sized for the targets still wanted from the ids per target
/// the page before found, with a margin, and never past the shard's last device.
@Suite struct PageWindowTests {
    @Test func theWindowHoldsTheWantedTargetsWithAMarginAndEndsAtTheShard() {
        var window = PageWindow()
        // Every other device until a page was read: 250 targets and 1.5 standard deviations (24),
        // and 4 more, at 2 ids each.
        #expect(window.end(after: 100, wanted: 250, last: 10_000) == 100 + 556)
        #expect(window.end(after: 9_900, wanted: 250, last: 10_000) == 10_000)
        window.observe(read: 1_000, found: 100, cutByEnd: false)
        #expect(window.idsPerTarget == 10)
        #expect(window.end(after: 0, wanted: 1, last: 1_000_000) == 65)
        // Nothing found in 500 ids: the next window is at least that wide per target.
        window.observe(read: 500, found: 0, cutByEnd: false)
        #expect(window.idsPerTarget == 500)
        window.observe(read: 40, found: 0, cutByEnd: false)
        #expect(window.idsPerTarget == 1_000)
        // The shard's end cut the window short: nothing learnt.
        window.observe(read: 40, found: 0, cutByEnd: true)
        window.observe(read: 40, found: 40, cutByEnd: true)
        #expect(window.idsPerTarget == 1_000)
        // Every device a target.
        window.observe(read: 250, found: 250, cutByEnd: false)
        #expect(window.idsPerTarget == 1)
        #expect(window.end(after: Int64.max - 10, wanted: 250, last: Int64.max) == Int64.max)
        #expect(window.end(after: Int64.max - 1_000, wanted: 250, last: Int64.max) == Int64.max - 1_000 + 278)
        // A window wider than the ids left, however wide, ends at the last one.
        window.observe(read: Int64.max / 2, found: 0, cutByEnd: false)
        #expect(window.end(after: 1 << 40, wanted: 250, last: Int64.max) == Int64.max)
    }

    @Test func pagesThatNeededASecondQueryWidenTheWindowAndPagesThatDidNotNarrowIt() {
        var window = PageWindow()
        window.filled(afterQueries: 2)
        window.filled(afterQueries: 3)
        #expect(window.slack == 1.44)
        #expect(window.end(after: 0, wanted: 250, last: 10_000) == 800)
        for _ in 0..<10 { window.filled(afterQueries: 2) }
        #expect(window.slack == 2)
        for _ in 0..<100 { window.filled(afterQueries: 1) }
        #expect(window.slack == 1)
    }
}
