@testable import Loadgen
import Testing

struct DueHeapTests {
    @Test func popsInTimeOrderOnlyWhenDue() {
        var heap = DueHeap()
        var random = SplitMixForTests(seed: 7)
        var expected: [Int64] = []
        for connection in 0..<500 {
            let due = Int64(random.next() % 10_000)
            heap.push(due, connection)
            expected.append(due)
        }
        expected.sort()
        #expect(heap.popDue(-1) == nil)
        var popped: [Int64] = []
        while let (due, _) = heap.popDue(.max) { popped.append(due) }
        #expect(popped == expected)
        #expect(heap.isEmpty && heap.earliest == nil)
    }
}
