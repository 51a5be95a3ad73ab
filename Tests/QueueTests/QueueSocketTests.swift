import Core
import Queue
import Testing
import TestSupport

/// Real ZeroMQ sockets over a Unix-domain endpoint in a temporary folder, as ingest and workers use them.
@Suite struct QueueSocketTests {
    /// Runs `body` with a context and a socket of `kind` bound to a fresh endpoint; sockets `body`
    /// opens must be closed before it returns (the context waits for them).
    func withBoundSocket(_ kind: QueueSocket.Kind, _ body: (QueueContext, QueueSocket, _ endpoint: String) throws -> Void) throws {
        let folder = try TemporaryDirectory()
        let context = QueueContext()
        defer { context.terminate() }
        let socket = try QueueSocket(context, kind: kind)
        defer { socket.close() }
        let endpoint = "ipc://\(folder.path)/queue"
        try socket.bind(endpoint)
        try body(context, socket, endpoint)
    }

    @Test func routerAndDealerExchangeFramesByIdentity() throws {
        try withBoundSocket(.router) { context, router, endpoint in
            let dealer = try QueueSocket(context, kind: .dealer)
            defer { dealer.close() }
            try dealer.setIdentity("worker-1")
            try dealer.connect(endpoint)

            try dealer.send([QueueMessage.ack(worker: "worker-1", shard: 3).encoded])
            let received = try #require(try router.receive(timeoutMilliseconds: 5_000))
            #expect(received.count == 2)
            #expect(String(decoding: received[0], as: UTF8.self) == "worker-1")
            #expect(QueueMessage.decode(received[1]) == .ack(worker: "worker-1", shard: 3))

            try router.send([received[0], QueueMessage.job(shard: 7).encoded])
            let job = try #require(try dealer.receive(timeoutMilliseconds: 5_000))
            #expect(job.count == 1 && QueueMessage.decode(job[0]) == .job(shard: 7))
        }
    }

    @Test func aRouterRefusesAPeerItDoesNotKnowInsteadOfDroppingSilently() throws {
        try withBoundSocket(.router) { _, router, _ in
            #expect(throws: QueueError.self) { try router.send([Array("nobody".utf8), QueueMessage.job(shard: 1).encoded], wait: false) }
        }
    }

    @Test func receiveGivesUpAfterItsTimeout() throws {
        try withBoundSocket(.pull) { _, pull, _ in
            let received = try pull.receive(timeoutMilliseconds: 50)
            #expect(received == nil)
        }
    }
}
