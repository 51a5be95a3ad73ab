/// How far a page query that reads tag rows reads: the window of device ids expected to hold the
/// targets still wanted, from the ids per target that the message's last page found. A window too
/// wide reads tag rows for nothing (reading twice a page's window took a page 1.3 × as long); one
/// too narrow costs a second query for the rest (planned, about 0.5 ms: as much as reading some
/// 600 ids more).
struct PageWindow: Sendable {
    /// How many messages' windows a store remembers; beyond, it forgets them all.
    static let remembered = 256

    /// Device ids per target; before a page was read, every other device.
    private(set) var idsPerTarget: Double = 2
    /// How much wider than the count's spread suggests the window is: where targets come in
    /// clumps (a run of devices registered together, none of them matching), one window in four
    /// came back short with a margin of 1.5 standard deviations. Widened by each page that needed
    /// another query and narrowed a little by each that did not, it settles where about one page in
    /// ten needs one.
    private(set) var slack: Double = 1

    /// The end of the window after `after` expected to hold `wanted` targets, with a margin of
    /// 1.5 standard deviations of their count (times `slack`), and at most `last`.
    func end(after: Int64, wanted: Int, last: Int64) -> Int64 {
        let span = ((Double(wanted) + 1.5 * Double(wanted).squareRoot() + 4) * idsPerTarget * slack).rounded(.up)
        return span < Double(last - after) ? after + Int64(span) : last
    }

    /// Learns from a page so far: its first `read` device ids held `found` targets. None found,
    /// the next window is at least twice as wide. A window that the shard's end cut short
    /// (`cutByEnd`) says little about the next shard's devices: it teaches nothing.
    mutating func observe(read: Int64, found: Int, cutByEnd: Bool) {
        guard !cutByEnd else { return }
        idsPerTarget = found > 0 ? max(1, Double(read) / Double(found)) : max(2 * idsPerTarget, Double(read))
    }

    /// Learns from a page that was filled: whether it took more than one query.
    mutating func filled(afterQueries queries: Int) {
        slack = queries > 1 ? min(2, slack * 1.2) : max(1, slack * 0.98)
    }
}
