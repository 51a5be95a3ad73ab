/// Connections waiting for a time (their next scheduled request, or a retry after a failed
/// connection), earliest first: a binary min-heap of (time, connection).
struct DueHeap {
    private var items: [(due: Int64, connection: Int)] = []

    var isEmpty: Bool { items.isEmpty }
    var count: Int { items.count }
    var earliest: Int64? { items.first?.due }

    mutating func push(_ due: Int64, _ connection: Int) {
        items.append((due, connection))
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child].due < items[parent].due else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest entry when it is due at or before `now`.
    mutating func popDue(_ now: Int64) -> (due: Int64, connection: Int)? {
        guard let first = items.first, first.due <= now else { return nil }
        let last = items.removeLast()
        if !items.isEmpty {
            items[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                guard left < items.count else { break }
                var smallest = left
                if left + 1 < items.count && items[left + 1].due < items[left].due { smallest = left + 1 }
                guard items[smallest].due < items[parent].due else { break }
                items.swapAt(smallest, parent)
                parent = smallest
            }
        }
        return first
    }

    mutating func removeAll() { items.removeAll() }
}
