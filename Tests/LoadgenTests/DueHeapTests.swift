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

/// A connection takes its devices in rounds.
struct LoadConnectionTests {
    @Test func everyDeviceHasItsTurnBeforeAnyHasASecond() {
        for (devices, connections) in [(1, 1), (2, 1), (10, 3), (1000, 64), (97, 4), (64, 64)] {
            for number in 0..<connections {
                let connection = LoadConnection(number: number, connections: connections, devices: devices, seed: 5)
                #expect(connection.deviceCount == (devices - number + connections - 1) / connections)
                for _ in 0..<2 {
                    var seen = Set<Int>()
                    for _ in 0..<connection.deviceCount { seen.insert(connection.nextDevice()) }
                    #expect(seen == Set(0..<connection.deviceCount), "\(devices) devices, connection \(number) of \(connections)")
                }
            }
        }
    }
}
