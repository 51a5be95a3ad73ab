import Core
import Queue
import Testing
import TestSupport

/// Real ZeroMQ sockets over a Unix-domain endpoint in a temporary folder, as ingest and workers use them.
@Suite struct QueueSocketTests {
    @Test func routerAndDealerExchangeFramesByIdentity() throws {
        let folder = try TemporaryDirectory()
        let context = QueueContext()
        defer { context.terminate() }
        let router = try QueueSocket(context, kind: .router)
        defer { router.close() }
        try router.bind("ipc://\(folder.path)/jobs")
        let dealer = try QueueSocket(context, kind: .dealer)
        defer { dealer.close() }
        try dealer.setIdentity("worker-1")
        try dealer.connect("ipc://\(folder.path)/jobs")

        try dealer.send([QueueMessage.ack(worker: "worker-1", shard: 3).encoded])
        let received = try #require(try router.receive(timeoutMilliseconds: 5_000))
        #expect(received.count == 2)
        #expect(String(decoding: received[0], as: UTF8.self) == "worker-1")
        #expect(QueueMessage.decode(received[1]) == .ack(worker: "worker-1", shard: 3))

        try router.send([received[0], QueueMessage.job(shard: 7).encoded])
        let job = try #require(try dealer.receive(timeoutMilliseconds: 5_000))
        #expect(job.count == 1 && QueueMessage.decode(job[0]) == .job(shard: 7))
    }

    @Test func aRouterRefusesAPeerItDoesNotKnowInsteadOfDroppingSilently() throws {
        let folder = try TemporaryDirectory()
        let context = QueueContext()
        defer { context.terminate() }
        let router = try QueueSocket(context, kind: .router)
        defer { router.close() }
        try router.bind("ipc://\(folder.path)/jobs")
        #expect(throws: QueueError.self) { try router.send([Array("nobody".utf8), QueueMessage.job(shard: 1).encoded], wait: false) }
    }

    @Test func receiveGivesUpAfterItsTimeout() throws {
        let folder = try TemporaryDirectory()
        let context = QueueContext()
        defer { context.terminate() }
        let pull = try QueueSocket(context, kind: .pull)
        defer { pull.close() }
        try pull.bind("ipc://\(folder.path)/results")
        #expect(try pull.receive(timeoutMilliseconds: 50) == nil)
    }
}
