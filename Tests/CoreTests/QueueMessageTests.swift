import Testing
@testable import Core

@Suite struct QueueMessageTests {
    @Test func messagesSurviveEncoding() {
        let messages: [QueueMessage] = [
            .heartbeat(worker: "w-1", pid: 42, capacity: 2, jobsInFlight: 1, stats: ["pushes": ["sink|sent": 3]]),
            .ack(worker: "w-1", shard: 7), .job(shard: 9), .reports(after: 100, through: 5_100),
            .reportsDone(worker: "w-2", after: 100, processed: 4_998),
        ]
        for message in messages { #expect(QueueMessage.decode(message.encoded) == message) }
        #expect(QueueMessage.decode(Array(#"{"type":"reports","after":5,"through":5}"#.utf8)) == nil)
        #expect(QueueMessage.decode(Array(#"{"type":"nope"}"#.utf8)) == nil)
    }
}
