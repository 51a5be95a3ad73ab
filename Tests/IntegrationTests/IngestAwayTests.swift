import Foundation
import Core
import Queue
import SDKClient
import TestSupport
import Testing

/// A real worker whose ingest goes away for longer than the 5 s after which the worker warns, with
/// that ingest's queue endpoints played by the test's own ZeroMQ sockets, bound as ingest binds
/// them (ROUTER for jobs, PULL for results) over the tests' Unix-domain endpoints.
@Suite struct IngestAwayTests {
    /// Receives from `socket` until a message `wanted` accepts arrives, at most `timeout` seconds.
    static func receive(_ socket: QueueSocket, timeout: Double, until wanted: (QueueMessage) -> Bool) throws -> QueueMessage {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if let frame = try socket.receive(timeoutMilliseconds: 100)?.last, let message = QueueMessage.decode(frame), wanted(message) {
                return message
            }
        }
        throw HTTPClient.Failure(description: "no such message within \(timeout) s")
    }

    /// The id of the worker whose next heartbeat arrives on `socket` (within 10 s).
    static func heartbeatSender(_ socket: QueueSocket) throws -> String? {
        let message = try receive(socket, timeout: 10) { if case .heartbeat = $0 { true } else { false } }
        guard case .heartbeat(let worker, _, _, _, _, _, _) = message else { return nil }
        return worker
    }

    /// The ingest that handed the worker a report batch and then went away gets the batch's
    /// acknowledgement when it is back: the worker no longer closes its socket (and the messages
    /// queued in it) after 5 s without a handshake; libzmq connects again by itself.
    @Test func whatAWorkerSentAnIngestThatWasAwayReachesItWhenItIsBack() throws {
        let herald = try HeraldProcesses()
        let context = QueueContext()
        defer { context.terminate() }
        let (jobsA, resultsA) = ("ipc://\(herald.folder)/jobs-a", "ipc://\(herald.folder)/results-a")
        let (jobsB, resultsB) = ("ipc://\(herald.folder)/jobs-b", "ipc://\(herald.folder)/results-b")
        func bound(_ kind: QueueSocket.Kind, _ endpoint: String) throws -> QueueSocket {
            let socket = try QueueSocket(context, kind: kind)
            try socket.bind(endpoint)
            return socket
        }
        var ingestA = (jobs: try bound(.router, jobsA), results: try bound(.pull, resultsA))
        let ingestB = (jobs: try bound(.router, jobsB), results: try bound(.pull, resultsB))
        defer {
            for socket in [ingestA.jobs, ingestA.results, ingestB.jobs, ingestB.results] { socket.close() }
        }
        let config = try herald.writeConfig("worker.json") {
            $0["queue"] = ["jobs": [.string(jobsA), .string(jobsB)], "results": [.string(resultsA), .string(resultsB)]]
        }
        // A worker opens the database ingest creates: with no ingest process here, the test creates it.
        _ = try herald.stores()
        try herald.startWorker(config: config)
        let worker = try #require(try Self.heartbeatSender(ingestA.results))
        #expect(try Self.heartbeatSender(ingestB.results) == worker)

        // A's results endpoint goes away first, and the worker notices (what it wrote to the
        // connection before noticing may be lost with it); then A hands the worker a report batch
        // (the ROUTER refuses to send until the worker's jobs link has completed its handshake).
        let workerLog = { (try? String(contentsOfFile: herald.workerLogPath(0), encoding: .utf8)) ?? "" }
        ingestA.results.close()
        try waitUntil("the worker notices that A's results endpoint is gone", timeout: 20) {
            workerLog().split(separator: "\n").contains { $0.contains("lost the link to ingest") && $0.contains("queue.results=\(resultsA)") }
        }
        let batch = QueueMessage.reports(after: 0, through: 10).encoded
        try waitUntil("A's batch handed to the worker", timeout: 10) { (try? ingestA.jobs.send([Array(worker.utf8), batch], wait: false)) != nil }
        // The worker sends its acknowledgement to every ingest: B's copy tells that A's is queued.
        let done = QueueMessage.reportsDone(worker: worker, after: 0, processed: 0)
        _ = try Self.receive(ingestB.results, timeout: 10) { $0 == done }
        let queuedAt = Date()
        ingestA.jobs.close()

        // The worker warns about A after 5 s without a handshake. It used to close and reopen the
        // socket then, every 5 s, each time dropping what was queued in it.
        try waitUntil("the worker warns that A is away", timeout: 20) {
            workerLog().contains("cannot reach ingest: no handshake completed") && workerLog().contains("queue.results=\(resultsA)")
        }
        let past = 5.5 - Date().timeIntervalSince(queuedAt)
        if past > 0 { usleep(UInt32(past * 1_000_000)) }

        ingestA = (jobs: try bound(.router, jobsA), results: try bound(.pull, resultsA))
        let delivered = try? Self.receive(ingestA.results, timeout: 10) { $0 == done }
        #expect(delivered == done, "the acknowledgement queued while A was away: \(workerLog().suffix(2000))")
        // A hears heartbeats again, and the worker logged both links up again.
        #expect(try Self.heartbeatSender(ingestA.results) == worker)
        try waitUntil("the worker logs A's links up again", timeout: 10) {
            workerLog().components(separatedBy: "connected to ingest queue.results=\(resultsA)").count - 1 == 2
                && workerLog().components(separatedBy: "connected to ingest queue.jobs=\(jobsA)").count - 1 == 2
        }
    }
}
