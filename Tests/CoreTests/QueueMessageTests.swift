import Testing
@testable import Core

@Suite struct QueueMessageTests {
    /// Statistics with an entry in every section.
    static let sample: WorkerStatistics = {
        var stats = WorkerStatistics()
        stats.pushes = [.init(provider: "sink", outcome: "sent", count: 3)]
        stats.retries = [.init(provider: "apns", reason: "ServiceUnavailable", count: 1)]
        stats.ambiguous = [.init(provider: "apns", count: 1)]
        stats.connections = [.init(provider: "fcm", count: 2)]
        stats.latency = [.init(provider: "apns", buckets: [1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0], sum: 0.043, count: 2)]
        stats.circuits = [.init(provider: "apns", app: "A", open: true, reason: "ServiceUnavailable", openings: 1)]
        stats.process = ProcessFigures(cpuSeconds: 1.5, residentBytes: 40_000_000, startTimeSeconds: 1_796_000_000)
        return stats
    }()

    @Test func messagesSurviveEncoding() {
        let messages: [QueueMessage] = [
            .heartbeat(worker: "w-1", name: "vm-7-2", host: "vm-7.example", pid: 42, capacity: 2, jobsInFlight: 1, stats: Self.sample),
            .heartbeat(worker: "w-1", name: nil, host: nil, pid: 42, capacity: 2, jobsInFlight: 1, stats: WorkerStatistics()),
            .ack(worker: "w-1", shard: 7), .job(shard: 9), .reports(after: 100, through: 5_100),
            .reportsDone(worker: "w-2", after: 100, processed: 4_998), .reportsDone(worker: "w-2", after: 100, processed: 4_998, setAside: 2),
        ]
        for message in messages { #expect(QueueMessage.decode(message.encoded) == message) }
        #expect(QueueMessage.decode(Array(#"{"type":"reports","after":5,"through":5}"#.utf8)) == nil)
        #expect(QueueMessage.decode(Array(#"{"type":"nope"}"#.utf8)) == nil)
    }

    func decode(_ json: JSON) -> QueueMessage? { QueueMessage.decode(json.encoded()) }

    @Test func whatAnyPeerSendsIsCheckedStrictly() {
        let heartbeat: [String: JSON] = ["type": "heartbeat", "worker": "host-1.example-42-0a3f", "host": "host-1.example", "pid": 42,
                                         "capacity": 2, "jobs_in_flight": 0]
        func beat(_ changes: [String: JSON]) -> QueueMessage? { decode(.object(heartbeat.merging(changes) { _, new in new })) }
        // Capacity is capped: a peer advertising 1,000 gets room for what a worker has.
        #expect(beat(["capacity": 1000]) == .heartbeat(worker: "host-1.example-42-0a3f", name: nil, host: "host-1.example", pid: 42,
                                                       capacity: Pipeline.workerCapacity, jobsInFlight: 0, stats: WorkerStatistics()))
        // Ids and hosts that could break a log line or a /metrics label, and numbers out of range, are refused.
        for id: JSON in ["", "a\"b", "line\nbreak", "x{y}", "café", .string(String(repeating: "a", count: 201)), 7] {
            #expect(beat(["worker": id]) == nil, "\(id.text)")
            #expect(beat(["host": id]) == nil, "\(id.text)")
            #expect(beat(["name": id]) == nil, "\(id.text)")
        }
        #expect(beat(["host": .null]) == nil)
        // A worker that names no host (one built before hosts were sent) is still heard.
        #expect(decode(.object(heartbeat.filter { $0.key != "host" })) == .heartbeat(worker: "host-1.example-42-0a3f", name: nil, host: nil, pid: 42,
                                                                                      capacity: 2, jobsInFlight: 0, stats: WorkerStatistics()))
        #expect(beat(["pid": -1]) == nil && beat(["capacity": -1]) == nil && beat(["pid": "42"]) == nil)
        // Statistics of another shape are dropped; the heartbeat stays.
        #expect(beat(["stats": ["pushes": [["provider": "apns", "outcome": "sent", "count": -5]]]]) == beat([:]))
        #expect(beat(["stats": ["pushes": ["apns|sent": 5]]]) == beat([:]))
        #expect(beat(["stats": ["circuits": [["provider": "apns", "app": "A", "open": "yes", "reason": "", "openings": 0]]]]) == beat([:]))
        #expect(beat(["stats": ["latency": [["provider": "apns", "buckets": [1], "sum": 0.1, "count": 1]]]]) == beat([:]))
        let many = JSON.array((0...WorkerStatistics.maximumEntries).map { ["provider": .string("p\($0)"), "count": 1] })
        #expect(beat(["stats": ["connections": many]]) == beat([:]))
        #expect(beat(["stats": Self.sample.json]) == .heartbeat(worker: "host-1.example-42-0a3f", name: nil, host: "host-1.example", pid: 42,
                                                                capacity: 2, jobsInFlight: 0, stats: Self.sample))
        // Claims must be in range; a batch is never larger than the dispatcher hands out.
        #expect(decode(["type": "reports_done", "worker": "w", "after": 0, "processed": .int(Pipeline.reportBatchSize + 1)]) == nil)
        // `set_aside` is absent from older workers; never more than were processed.
        #expect(decode(["type": "reports_done", "worker": "w", "after": 0, "processed": 5]) == .reportsDone(worker: "w", after: 0, processed: 5))
        #expect(decode(["type": "reports_done", "worker": "w", "after": 0, "processed": 5, "set_aside": 6]) == nil)
        #expect(decode(["type": "reports_done", "worker": "w", "after": 0, "processed": 5, "set_aside": "1"]) == nil)
        #expect(decode(["type": "reports", "after": 0, "through": .int(Pipeline.reportBatchSize + 1)]) == nil)
        #expect(decode(["type": "ack", "worker": "w", "shard": 0]) == nil)
        // A frame larger than the limit is not even parsed.
        let huge = Array(#"{"type":"job","shard":1,"pad":""#.utf8) + [UInt8](repeating: 97, count: QueueMessage.maxFrameBytes) + Array(#""}"#.utf8)
        #expect(QueueMessage.decode(huge) == nil)
    }
}
