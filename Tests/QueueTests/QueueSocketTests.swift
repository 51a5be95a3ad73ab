import Core
import Foundation
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

    /// A worker that connects again under its id (after a partition, while ingest may still hold
    /// the old connection) gets what is sent to that id; without the handover the router would
    /// ignore the new connection.
    @Test func aPeerThatConnectsAgainUnderItsIdentityTakesItOver() throws {
        try withBoundSocket(.router) { context, router, endpoint in
            let old = try QueueSocket(context, kind: .dealer)
            defer { old.close() }
            try old.setIdentity("worker-1")
            try old.connect(endpoint)
            try old.send([Array("old".utf8)])
            #expect(try router.receive(timeoutMilliseconds: 5_000)?.last == Array("old".utf8))

            let new = try QueueSocket(context, kind: .dealer)
            defer { new.close() }
            try new.setIdentity("worker-1")
            try new.connect(endpoint)
            try new.send([Array("new".utf8)])
            #expect(try router.receive(timeoutMilliseconds: 5_000)?.last == Array("new".utf8))
            try router.send([Array("worker-1".utf8), QueueMessage.job(shard: 7).encoded], wait: false)
            let job = try #require(try new.receive(timeoutMilliseconds: 5_000))
            #expect(QueueMessage.decode(job[0]) == .job(shard: 7))
            #expect(try old.receive(timeoutMilliseconds: 0) == nil)
        }
    }

    @Test func aRouterRefusesAPeerItDoesNotKnowInsteadOfDroppingSilently() throws {
        try withBoundSocket(.router) { _, router, _ in
            #expect(throws: QueueError.self) { try router.send([Array("nobody".utf8), QueueMessage.job(shard: 1).encoded], wait: false) }
        }
    }

    /// Ingest lists each worker with the address its heartbeats come from: over TCP the sender's IP
    /// address, over IPC the sending process's credentials.
    @Test func aReceivedMessageTellsWhereItCameFrom() throws {
        let context = QueueContext()
        defer { context.terminate() }
        let folder = try TemporaryDirectory()
        let port = try HeraldProcesses.freePort()
        for (endpoint, address) in [("tcp://127.0.0.1:\(port)", "127.0.0.1"),
                                    ("ipc://\(folder.path)/queue", "localhost:\(getuid()):\(getgid()):\(getpid())")] {
            let pull = try QueueSocket(context, kind: .pull)
            defer { pull.close() }
            try pull.bind(endpoint)
            let push = try QueueSocket(context, kind: .push)
            defer { push.close() }
            try push.connect(endpoint)
            try push.send([Array("first".utf8), Array("second".utf8)])
            let received = try #require(try pull.receiveMessage(timeoutMilliseconds: 5_000))
            #expect(received.frames == [Array("first".utf8), Array("second".utf8)])
            #expect(received.peerAddress == address, "\(endpoint)")
        }
    }

    @Test func receiveGivesUpAfterItsTimeout() throws {
        try withBoundSocket(.pull) { _, pull, _ in
            let received = try pull.receive(timeoutMilliseconds: 50)
            #expect(received == nil)
        }
    }
}

/// CURVE between real sockets on loopback TCP: keys made by `CurveKeys`, a ZAP handler that lets in
/// only listed workers.
@Suite struct CurveTests {
    @Test func generatedKeysAreWrittenPrivatelyAndNeverOverwritten() throws {
        let folder = try TemporaryDirectory()
        let path = folder.file("worker.key")
        let publicKey = try CurveKeys.generate(writingSecretTo: path)
        let secret = try CurveSettings.readSecretKey(path: path, key: "k")
        #expect(CurveSettings.isKey(publicKey) && publicKey != secret)
        #expect(try CurveKeys.publicKey(ofSecret: secret) == publicKey)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(throws: (any Error).self) { try CurveKeys.generate(writingSecretTo: path) }
        #expect(try CurveSettings.readSecretKey(path: path, key: "k") == secret)
    }

    @Test func onlyListedWorkersGetThrough() throws {
        let folder = try TemporaryDirectory()
        let serverKeys = try curveKeyPair(in: folder, "server.key")
        let listed = try curveKeyPair(in: folder, "listed.key")
        let otherSecret = try curveKeyPair(in: folder, "other.key").secretKey

        let ingest = try CurveTestServer(secretKey: serverKeys.secretKey, admitting: [listed.publicKey])
        defer { ingest.close() }
        let server = ingest.socket

        func client(_ secret: String) throws -> QueueSocket {
            let socket = try QueueSocket(ingest.context, kind: .push)
            try socket.makeCurveClient(serverKey: serverKeys.publicKey, secretKey: secret)
            try socket.connect(ingest.endpoint)
            return socket
        }
        let stranger = try client(otherSecret)
        defer { stranger.close() }
        try stranger.send([Array("from a stranger".utf8)], wait: false)
        #expect(try server.receive(timeoutMilliseconds: 500) == nil, "an unlisted key gets nothing through")

        let listedClient = try client(listed.secretKey)
        defer { listedClient.close() }
        try listedClient.send([Array("hello".utf8)])
        let received = try #require(try server.receive(timeoutMilliseconds: 5_000))
        #expect(received == [Array("hello".utf8)])

        // After the key is listed (SIGHUP in ingest), the stranger's next handshake succeeds.
        ingest.authenticator.replace([listed.publicKey, try CurveKeys.publicKey(ofSecret: otherSecret)])
        let again = try client(otherSecret)
        defer { again.close() }
        try again.send([Array("now listed".utf8)])
        var texts: Set<String> = []
        while !texts.contains("now listed"), let frames = try server.receive(timeoutMilliseconds: 5_000) {
            texts.insert(String(decoding: frames[0], as: UTF8.self))
        }
        #expect(texts.contains("now listed"), "\(texts)")
    }

    /// Many peers knocking with keys nobody listed, each key new: one line is written (the rest
    /// wait for the next minute's summary, counted in bounded memory), and a listed worker still
    /// gets through.
    @Test func manyUnlistedKeysAreLoggedOnceInBoundedMemory() throws {
        let folder = try TemporaryDirectory()
        let serverKeys = try curveKeyPair(in: folder, "server.key")
        let listed = try curveKeyPair(in: folder, "listed.key")
        let ingest = try CurveTestServer(secretKey: serverKeys.secretKey, admitting: [listed.publicKey])
        defer { ingest.close() }

        // In rounds of 100 sockets, within the process's file descriptors.
        let strangers = 600
        for round in 0..<strangers / 100 {
            let sockets = try (0..<100).map { _ in
                let socket = try QueueSocket(ingest.context, kind: .push, lingerMilliseconds: 0)
                try socket.makeCurveClient(serverKey: serverKeys.publicKey, secretKey: try CurveKeys.pair().secretKey)
                try socket.connect(ingest.endpoint)
                return socket
            }
            defer { sockets.forEach { $0.close() } }
            let deadline = Date().addingTimeInterval(20)
            while ingest.authenticator.heldRefusals.heldCount < (round + 1) * 100 - 1 && Date() < deadline { usleep(10_000) }
        }
        let held = ingest.authenticator.heldRefusals
        // The first refusal was written; every other one is held for the summary, none forgotten.
        #expect(held.heldCount >= strangers - 1 && abs(held.heldKeys.count - (strangers - 1)) < 30,
                "\(held.heldCount) refusals, \(held.heldKeys.count) keys")
        #expect(held.heldKeys.encoded.count <= 4_097)

        let client = try QueueSocket(ingest.context, kind: .push)
        defer { client.close() }
        try client.makeCurveClient(serverKey: serverKeys.publicKey, secretKey: listed.secretKey)
        try client.connect(ingest.endpoint)
        try client.send([Array("still let in".utf8)])
        #expect(try ingest.socket.receive(timeoutMilliseconds: 5_000) == [Array("still let in".utf8)])
    }
}
