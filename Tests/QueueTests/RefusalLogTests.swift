import Core
import Queue
import Testing

/// The refused-key log as a value, against simulated time (monotonic seconds).
struct RefusalLogTests {
    @Test func theFirstRefusalIsLoggedAtOnceAndTheRestSummedUpAMinuteLater() {
        var log = RefusalLog()
        #expect(log.refused(key: "key-0", address: "192.0.2.1", at: 1_000) == .refused(key: "key-0", address: "192.0.2.1"))
        // 299 more within the minute, 100 keys among them: nothing is written.
        for index in 1..<300 {
            #expect(log.refused(key: "key-\(index % 100)", address: "192.0.2.\(index % 7)", at: 1_000 + Double(index) / 10) == nil)
        }
        #expect(log.due(at: 1_059.9) == nil)
        #expect(log.due(at: 1_060) == .held(count: 299, keys: 100, lastKey: "key-99", lastAddress: "192.0.2.5"))
        #expect(log.heldCount == 0 && log.due(at: 2_000) == nil)
        // One more within a minute of that line is held; after it, a quiet minute, then one at once.
        #expect(log.refused(key: "key-1", address: "192.0.2.9", at: 1_070) == nil)
        #expect(log.refused(key: "key-2", address: "192.0.2.9", at: 1_120) == .held(count: 2, keys: 2, lastKey: "key-2", lastAddress: "192.0.2.9"))
        #expect(log.refused(key: "key-3", address: "192.0.2.8", at: 1_181) == .refused(key: "key-3", address: "192.0.2.8"))
    }

    @Test func refusalsHeldWhenIngestStopsAreSummedUpThen() {
        var log = RefusalLog()
        #expect(log.remaining(at: 1_000) == nil)
        #expect(log.refused(key: "key-0", address: "192.0.2.1", at: 1_000) == .refused(key: "key-0", address: "192.0.2.1"))
        #expect(log.remaining(at: 1_001) == nil)
        #expect(log.refused(key: "key-1", address: "192.0.2.2", at: 1_002) == nil)
        #expect(log.refused(key: "key-1", address: "192.0.2.3", at: 1_003) == nil)
        #expect(log.remaining(at: 1_004) == .held(count: 2, keys: 1, lastKey: "key-1", lastAddress: "192.0.2.3"))
        #expect(log.heldCount == 0 && log.remaining(at: 1_005) == nil)
    }

    @Test func aFloodOfNewKeysWritesALineAMinuteInBoundedMemory() {
        var log = RefusalLog()
        var lines: [RefusalLog.Line] = []
        var largestSketch = 0
        // Ten minutes of 200 refusals a second, each with a key never seen before.
        for index in 0..<120_000 {
            if let line = log.refused(key: "key-\(index)", address: "198.51.100.\(index % 250)", at: Double(index) / 200) { lines.append(line) }
            if index % 1_000 == 0 { largestSketch = max(largestSketch, log.heldKeys.encoded.count) }
        }
        if let line = log.due(at: 600) { lines.append(line) }
        #expect(lines.count == 11, "\(lines.count) lines")
        #expect(lines.first == .refused(key: "key-0", address: "198.51.100.0"))
        for case .held(let count, let keys, _, _) in lines {
            // 12,000 keys a minute (the last minute's refusals end one short of its line): counted
            // exactly, the keys told within 5 %.
            #expect((11_999...12_000).contains(count) && abs(keys - count) < 600, "\(count) refusals, \(keys) keys")
        }
        // The distinct keys of a minute take at most 4 KiB, however many there are.
        #expect(largestSketch <= 4_097, "\(largestSketch) bytes")
    }
}
