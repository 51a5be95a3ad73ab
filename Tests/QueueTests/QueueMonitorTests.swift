import Core
import Foundation
import Queue
import Testing
import TestSupport

/// A socket monitor over real sockets: CURVE on loopback TCP, plain over a Unix-domain endpoint.
@Suite struct QueueMonitorTests {
    /// The events of `monitor` until `stop` says so, or 5 s have passed.
    func events(_ monitor: QueueMonitor, until stop: ([QueueLinkEvent]) -> Bool) throws -> [QueueLinkEvent] {
        var seen: [QueueLinkEvent] = []
        let deadline = Date().addingTimeInterval(5)
        while !stop(seen) && Date() < deadline {
            seen += try monitor.events()
            usleep(20_000)
        }
        return seen
    }

    @Test func aPlainConnectionReportsItsHandshakeAndItsLoss() throws {
        let folder = try TemporaryDirectory()
        let context = QueueContext()
        defer { context.terminate() }
        let server = try QueueSocket(context, kind: .pull)
        try server.bind("ipc://\(folder.path)/results")
        let client = try QueueSocket(context, kind: .push)
        let monitor = try QueueMonitor(context, watching: client)
        defer {
            client.close()
            monitor.close()
        }
        try client.connect("ipc://\(folder.path)/results")
        #expect(try events(monitor) { $0.contains(.connected) } == [.connected])
        server.close()
        #expect(try events(monitor) { $0.contains(.lost) }.contains(.lost))
    }

    @Test func curveReportsAWrongServerKeyAsNoHandshakeAndAnUnlistedKeyAsRefused() throws {
        let folder = try TemporaryDirectory()
        let server = try curveKeyPair(in: folder, "server.key")
        let otherPublic = try CurveKeys.generate(writingSecretTo: folder.file("other-server.key"))
        let worker = try curveKeyPair(in: folder, "worker.key")
        let strangerSecret = try curveKeyPair(in: folder, "stranger.key").secretKey

        let ingest = try CurveTestServer(secretKey: server.secretKey, admitting: [worker.publicKey])
        defer { ingest.close() }

        func watch(serverKey: String, secret: String, until stop: ([QueueLinkEvent]) -> Bool) throws -> [QueueLinkEvent] {
            let client = try QueueSocket(ingest.context, kind: .push)
            let monitor = try QueueMonitor(ingest.context, watching: client)
            defer {
                client.close()
                monitor.close()
            }
            try client.makeCurveClient(serverKey: serverKey, secretKey: secret)
            try client.connect(ingest.endpoint)
            return try events(monitor, until: stop)
        }
        #expect(try watch(serverKey: server.publicKey, secret: worker.secretKey) { $0.contains(.connected) } == [.connected])
        // A wrong server key: libzmq keeps trying, and no handshake ever completes.
        let wrong = try watch(serverKey: otherPublic, secret: worker.secretKey) { $0.count >= 3 }
        #expect(wrong.count >= 3 && !wrong.contains(.connected), "\(wrong)")
        let stranger = try watch(serverKey: server.publicKey, secret: strangerSecret) { !$0.isEmpty }
        #expect(stranger.first == .refused && !stranger.contains(.connected), "\(stranger)")
    }
}
