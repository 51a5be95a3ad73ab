import Core

/// How `--json` writes a histogram's non-empty buckets: one flat array of pairs, each the distance
/// from the previous pair's bucket index (from 0 for the first) and the count, so that the runs of
/// neighbouring buckets a latency distribution has cost about two numbers each.
enum SparseBuckets {
    static func encode(_ buckets: [(index: Int, count: UInt64)]) -> JSON {
        var items: [JSON] = []
        items.reserveCapacity(buckets.count * 2)
        var previous = 0
        for (index, count) in buckets {
            items.append(.int(Int64(index - previous)))
            items.append(.int(Int64(count)))
            previous = index
        }
        return .array(items)
    }

    /// The buckets of `json`, lowest first; nil unless it is such an array of whole numbers, with
    /// indexes rising and counts above 0.
    static func decode(_ json: JSON?) -> [(index: Int, count: UInt64)]? {
        guard let items = json?.arrayValue, items.count % 2 == 0 else { return nil }
        var buckets: [(index: Int, count: UInt64)] = []
        buckets.reserveCapacity(items.count / 2)
        var index = 0
        for pair in stride(from: 0, to: items.count, by: 2) {
            guard case .int(let step) = items[pair], case .int(let count) = items[pair + 1], count > 0,
                  step >= 0 && step < 1 << 20, step > 0 || buckets.isEmpty else { return nil }
            index += Int(step)
            buckets.append((index, UInt64(count)))
        }
        return buckets
    }
}
