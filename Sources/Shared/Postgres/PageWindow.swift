/// How far a page query reads: the window of device ids expected to hold the targets still wanted,
/// from the ids per target that the message's last page found. A window too wide reads tag rows
/// (and recent sends) for nothing (reading twice a page's window took a page 1.3 × as long); one
/// too narrow costs a second query for the rest.
struct PageWindow: Sendable {
    /// How many messages' windows a store remembers; beyond, it forgets them all.
    static let remembered = 256

    /// Device ids per target; before a page was read, every other device.
    private(set) var idsPerTarget: Double = 2

    /// The end of the window after `after` expected to hold `wanted` targets, with a margin of
    /// 1.5 standard deviations of their count (about one page in fifteen needs a second query),
    /// and at most `last`.
    func end(after: Int64, wanted: Int, last: Int64) -> Int64 {
        let span = ((Double(wanted) + 1.5 * Double(wanted).squareRoot() + 4) * idsPerTarget).rounded(.up)
        return span < Double(last - after) ? after + Int64(span) : last
    }

    /// Learns from a page so far: its first `read` device ids held `found` targets. None found,
    /// the next window is at least twice as wide.
    mutating func observe(read: Int64, found: Int) {
        idsPerTarget = found > 0 ? max(1, Double(read) / Double(found)) : max(2 * idsPerTarget, Double(read))
    }
}
