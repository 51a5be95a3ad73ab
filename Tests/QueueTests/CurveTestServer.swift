import Core
import Queue
import TestSupport

/// A key pair as `--generate-curve-key` writes one: the secret key in `folder/name`.
func curveKeyPair(in folder: TemporaryDirectory, _ name: String) throws -> (publicKey: String, secretKey: String) {
    let publicKey = try CurveKeys.generate(writingSecretTo: folder.file(name))
    return (publicKey, try CurveSettings.readSecretKey(path: folder.file(name), key: "k"))
}

/// A CURVE PULL socket on loopback TCP that admits the listed worker keys, as ingest's queue
/// sockets do, with its own context and ZAP handler. `close()` (after every client socket on
/// `context` is closed) closes the socket, stops the handler and ends the context.
final class CurveTestServer {
    let context = QueueContext()
    let authenticator: CurveAuthenticator
    let socket: QueueSocket
    let endpoint: String

    init(secretKey: String, admitting keys: Set<String>) throws {
        authenticator = CurveAuthenticator(keys: keys, logger: Logger(label: "test", level: .none))
        try authenticator.start(context: context)
        socket = try QueueSocket(context, kind: .pull)
        try socket.makeCurveServer(secretKey: secretKey)
        endpoint = "tcp://127.0.0.1:\(try HeraldProcesses.freePort())"
        try socket.bind(endpoint)
    }

    func close() {
        socket.close()
        authenticator.stop()
        context.terminate()
    }
}
