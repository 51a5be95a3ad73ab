import Foundation
import Core
import Queue
import SDKClient
import TestSupport
import Testing

/// Ingest's queue endpoints as any local process can reach them: a rogue peer sends garbage, a frame
/// far over the limit, claims for work it does not hold, and heartbeats meant to break `/metrics`,
/// while a real worker runs a campaign.
@Suite(.serialized) struct QueueRobustnessTests {
    @Test func aRoguePeerCannotHarmACampaignOrTheMetrics() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        try herald.startWorker()
        try herald.waitForWorkers(1)
        for index in 0..<300 { try herald.register(SDKDevice("r-\(index)", platform: index % 2 == 0 ? 1 : 3)) }

        let context = QueueContext()
        defer { context.terminate() }
        let results = try QueueSocket(context, kind: .push)
        defer { results.close() }
        try results.connect("ipc://\(herald.folder)/results")
        let jobs = try QueueSocket(context, kind: .dealer)
        defer { jobs.close() }
        try jobs.setIdentity("rogue")
        try jobs.connect("ipc://\(herald.folder)/jobs")
        let injected = "evil\"} 1\nherald_fake_metric{x=\"1"
        let frames: [[UInt8]] = [
            Array("not json at all".utf8), [0xFF, 0x00, 0xFE],
            JSON.object(["type": "heartbeat", "worker": .string(injected), "pid": 1, "capacity": 1000, "jobs_in_flight": 0]).encoded(),
            // A valid id with capacity 0 (a worker that is stopping: it gets no work) and statistics built to inject.
            JSON.object(["type": "heartbeat", "worker": "x", "pid": 1, "capacity": 0, "jobs_in_flight": 0,
                         "stats": ["pushes": .object([injected: 1])]]).encoded(),
            QueueMessage.reportsDone(worker: "rogue", after: 0, processed: 5_000).encoded,
            QueueMessage.ack(worker: "rogue", shard: 1).encoded,
        ]
        for frame in frames { try results.send([frame]) }
        // Anyone reaching the port can repeat a forged acknowledgement: one line a minute, not one each.
        for _ in 0..<200 { try results.send([QueueMessage.reportsDone(worker: "rogue", after: 0, processed: 5_000).encoded]) }
        try jobs.send([QueueMessage.reportsDone(worker: "rogue", after: 0, processed: 5_000).encoded])
        // Far over the frame limit: libzmq drops the connection that sends it.
        try results.send([[UInt8](repeating: 120, count: 4 * QueueMessage.maxFrameBytes)])

        let code = try herald.send(["send_date": "now", "content": "Unharmed"])
        let funnel = try herald.waitForMessage(code, timeout: 20)
        #expect(funnel["sent"] == 300 && funnel["failed"] == 0, "\(funnel.text)")
        #expect(try herald.sinkHWIDs(code).count == 300)

        // /metrics stays well-formed: every sample line is `name{label="value",...} number`.
        let text = try herald.client.request("GET", "/metrics").text
        let sample = try Regex(#"^[a-z_]+(\{([a-z_]+="([^"\\\n]|\\.)*",?)*\})? -?[0-9.e+]+$"#)
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            #expect(String(line).wholeMatch(of: sample) != nil, "\(line)")
        }
        #expect(!text.contains("herald_fake_metric"))
        // The stats-bearing fake (a valid id, bad stats) may show up as a worker, but never with its payload.
        #expect(!text.contains("evil"))
        #expect(herald.log().contains("malformed queue message ignored"))
        let strayLines = herald.log().split(separator: "\n").filter { $0.contains("report batch acknowledgement ignored") }
        #expect(strayLines.count == 1, "\(strayLines.count) lines")
        #expect(herald.stopIngest() == 0, "ingest stops cleanly: \(herald.log().suffix(1000))")
    }
}
