import Testing
@testable import Core

@Suite struct QueueMessageTests {
    @Test func messagesSurviveEncoding() {
        let messages: [QueueMessage] = [
            .heartbeat(worker: "w-1", host: "vm-7.example", pid: 42, capacity: 2, jobsInFlight: 1, stats: ["pushes": ["sink|sent": 3]]),
            .heartbeat(worker: "w-1", host: nil, pid: 42, capacity: 2, jobsInFlight: 1, stats: [:]),
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
        #expect(beat(["capacity": 1000]) == .heartbeat(worker: "host-1.example-42-0a3f", host: "host-1.example", pid: 42,
                                                       capacity: Pipeline.workerCapacity, jobsInFlight: 0, stats: [:]))
        // Ids and hosts that could break a log line or a /metrics label, and numbers out of range, are refused.
        for id: JSON in ["", "a\"b", "line\nbreak", "x{y}", "café", .string(String(repeating: "a", count: 201)), 7] {
            #expect(beat(["worker": id]) == nil, "\(id.text)")
            #expect(beat(["host": id]) == nil, "\(id.text)")
        }
        #expect(beat(["host": .null]) == nil)
        // A worker that names no host (one built before hosts were sent) is still heard.
        #expect(decode(.object(heartbeat.filter { $0.key != "host" })) == .heartbeat(worker: "host-1.example-42-0a3f", host: nil, pid: 42,
                                                                                      capacity: 2, jobsInFlight: 0, stats: [:]))
        #expect(beat(["pid": -1]) == nil && beat(["capacity": -1]) == nil && beat(["pid": "42"]) == nil)
        // Statistics of another shape are dropped; the heartbeat stays.
        #expect(beat(["stats": ["pushes": ["apns|sent": -5]]]) == beat([:]))
        #expect(beat(["stats": ["evil": [:]]]) == beat([:]))
        #expect(beat(["stats": ["circuits": ["apns|A": ["open": "yes"]]]]) == beat([:]))
        let good: JSON = ["pushes": ["apns|sent": 5], "circuits": ["apns|A": ["open": true, "reason": "ServiceUnavailable", "openings": 1]]]
        #expect(beat(["stats": good]) == .heartbeat(worker: "host-1.example-42-0a3f", host: "host-1.example", pid: 42, capacity: 2,
                                                    jobsInFlight: 0, stats: good))
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
