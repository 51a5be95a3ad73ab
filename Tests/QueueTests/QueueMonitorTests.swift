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
        let serverPublic = try CurveKeys.generate(writingSecretTo: folder.file("server.key"))
        let serverSecret = try CurveSettings.readSecretKey(path: folder.file("server.key"), key: "k")
        let otherPublic = try CurveKeys.generate(writingSecretTo: folder.file("other-server.key"))
        let workerPublic = try CurveKeys.generate(writingSecretTo: folder.file("worker.key"))
        let workerSecret = try CurveSettings.readSecretKey(path: folder.file("worker.key"), key: "k")
        _ = try CurveKeys.generate(writingSecretTo: folder.file("stranger.key"))
        let strangerSecret = try CurveSettings.readSecretKey(path: folder.file("stranger.key"), key: "k")

        let context = QueueContext()
        defer { context.terminate() }
        let authenticator = CurveAuthenticator(keys: [workerPublic], logger: Logger(label: "test", level: .none))
        try authenticator.start(context: context)
        defer { authenticator.stop() }
        let server = try QueueSocket(context, kind: .pull)
        defer { server.close() }
        try server.makeCurveServer(secretKey: serverSecret)
        let port = try HeraldProcesses.freePort()
        try server.bind("tcp://127.0.0.1:\(port)")

        func watch(serverKey: String, secret: String, until stop: ([QueueLinkEvent]) -> Bool) throws -> [QueueLinkEvent] {
            let client = try QueueSocket(context, kind: .push)
            let monitor = try QueueMonitor(context, watching: client)
            defer {
                client.close()
                monitor.close()
            }
            try client.makeCurveClient(serverKey: serverKey, secretKey: secret)
            try client.connect("tcp://127.0.0.1:\(port)")
            return try events(monitor, until: stop)
        }
        #expect(try watch(serverKey: serverPublic, secret: workerSecret) { $0.contains(.connected) } == [.connected])
        // A wrong server key: libzmq keeps trying, and no handshake ever completes.
        let wrong = try watch(serverKey: otherPublic, secret: workerSecret) { $0.count >= 3 }
        #expect(wrong.count >= 3 && !wrong.contains(.connected), "\(wrong)")
        let stranger = try watch(serverKey: serverPublic, secret: strangerSecret) { !$0.isEmpty }
        #expect(stranger.first == .refused && !stranger.contains(.connected), "\(stranger)")
    }
}
