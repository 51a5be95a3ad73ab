internal import CZeroMQ
import Foundation
import Synchronization
import Core

/// ZeroMQ CURVE keys: Z85 text, 40 characters.
public enum CurveKeys {
    /// Writes a new secret key to `path` (mode 0600; an existing file is never overwritten) and
    /// returns its public key.
    public static func generate(writingSecretTo path: String) throws -> String {
        let keys = try pair()
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw QueueError(operation: "create \(path)", errno: errno) }
        defer { close(fd) }
        let line = Array(keys.secretKey.utf8) + [UInt8(ascii: "\n")]
        guard write(fd, line, line.count) == line.count, fsync(fd) == 0 else { throw QueueError(operation: "write \(path)", errno: errno) }
        return keys.publicKey
    }

    /// A new key pair.
    public static func pair() throws(QueueError) -> (publicKey: String, secretKey: String) {
        guard zmq_has("curve") != 0 else { throw QueueError(operation: "CURVE (libzmq was built without it)", errno: 0) }
        var publicKey = [CChar](repeating: 0, count: 41)
        var secretKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&publicKey, &secretKey) == 0 else { throw QueueError(operation: "curve_keypair", errno: zmq_errno()) }
        return (text(publicKey), text(secretKey))
    }

    /// The public key of a secret key.
    public static func publicKey(ofSecret secret: String) throws(QueueError) -> String {
        var publicKey = [CChar](repeating: 0, count: 41)
        guard zmq_curve_public(&publicKey, secret) == 0 else { throw QueueError(operation: "curve_public", errno: zmq_errno()) }
        return text(publicKey)
    }

    /// The text of a NUL-terminated buffer.
    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension QueueSocket {
    /// Makes this (listening) socket a CURVE server with `secretKey`: clients must know its public
    /// key, and the context's `CurveAuthenticator` decides which client keys are let in.
    public func makeCurveServer(secretKey: String) throws(QueueError) {
        try setOption(ZMQ_CURVE_SERVER, 1)
        try setText(ZMQ_CURVE_SECRETKEY, secretKey, name: "CURVE_SECRETKEY")
    }

    /// Makes this (connecting) socket a CURVE client of the server with `serverKey`.
    public func makeCurveClient(serverKey: String, secretKey: String) throws(QueueError) {
        try setText(ZMQ_CURVE_SERVERKEY, serverKey, name: "CURVE_SERVERKEY")
        try setText(ZMQ_CURVE_PUBLICKEY, try CurveKeys.publicKey(ofSecret: secretKey), name: "CURVE_PUBLICKEY")
        try setText(ZMQ_CURVE_SECRETKEY, secretKey, name: "CURVE_SECRETKEY")
    }
}

/// Ingest's ZAP handler (ZeroMQ's authentication protocol, RFC 27): every CURVE handshake on the
/// context's server sockets asks it whether the client's public key is authorized. A worker whose
/// key is not listed gets nothing (its handshake is refused) and is logged, in at most one line a
/// minute whoever knocks (`RefusalLog`). The key set can be replaced while running (SIGHUP re-reads
/// the file).
public final class CurveAuthenticator: Sendable {
    private let keys: Lock<Set<String>>
    private let refusals = Lock(RefusalLog())
    private let logger: Logger
    private let stopping = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)

    public init(keys: Set<String>, logger: Logger) {
        self.keys = Lock(keys)
        self.logger = logger
    }

    /// Replaces the authorized keys; connections already admitted stay.
    public func replace(_ newKeys: Set<String>) {
        keys.withLock { $0 = newKeys }
    }

    /// Binds the handler in `context` (before any CURVE server socket of the context binds) and
    /// answers on its own thread until `stop()`.
    public func start(context: QueueContext) throws {
        let ready = DispatchSemaphore(value: 0)
        let failure = Lock<(any Error)?>(nil)
        let thread = Thread(named: "zap") { [self] in
            let socket: QueueSocket
            do {
                socket = try QueueSocket(context, kind: .reply)
                try socket.bind("inproc://zeromq.zap.01")
            } catch {
                failure.withLock { $0 = error }
                ready.signal()
                finished.signal()
                return
            }
            ready.signal()
            while !stopping.load(ordering: .relaxed) {
                guard let request = try? socket.receive(timeoutMilliseconds: 200) else {
                    log(refusals.withLock { $0.due(at: monotonicSeconds()) })
                    continue
                }
                try? socket.send(answer(request))
            }
            socket.close()
            log(refusals.withLock { $0.remaining(at: monotonicSeconds()) })
            finished.signal()
        }
        thread.start()
        ready.wait()
        if let error = failure.withLock({ $0 }) { throw error }
    }

    /// The ZAP reply to one request: version, request id, status code and text, user id, metadata.
    func answer(_ request: [[UInt8]]) -> [[UInt8]] {
        guard request.count >= 7, request[0] == Array("1.0".utf8) else {
            return [Array("1.0".utf8), request.count > 1 ? request[1] : [], Array("400".utf8), Array("malformed request".utf8), [], []]
        }
        let address = String(decoding: request[3], as: UTF8.self)
        guard request[5] == Array("CURVE".utf8), request[6].count == 32, let key = Z85.encode(request[6]) else {
            return [request[0], request[1], Array("400".utf8), Array("CURVE required".utf8), [], []]
        }
        guard keys.withLock({ $0.contains(key) }) else {
            log(refusals.withLock { $0.refused(key: key, address: address, at: monotonicSeconds()) })
            return [request[0], request[1], Array("400".utf8), Array("key not authorized".utf8), [], []]
        }
        return [request[0], request[1], Array("200".utf8), Array("OK".utf8), Array(key.utf8), []]
    }

    /// Writes the refusal line `RefusalLog` asked for, if any.
    func log(_ line: RefusalLog.Line?) {
        switch line {
        case .refused(let key, let address):
            logger.warning("worker refused: its CURVE key is not in queue.curve.authorized_keys_file",
                           ["curve.public_key": key, "peer.address": address])
        case .held(let count, let keys, let lastKey, let lastAddress):
            logger.warning("worker refused: \(count) more refused from \(keys) key\(keys == 1 ? "" : "s"), last",
                           ["curve.public_key": lastKey, "peer.address": lastAddress])
        case nil:
            break
        }
    }

    /// The refusals counted and not logged yet.
    package var heldRefusals: RefusalLog { refusals.withLock { $0 } }

    public func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
    }
}
