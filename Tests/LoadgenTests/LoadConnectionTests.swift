@testable import Loadgen
import Testing

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
