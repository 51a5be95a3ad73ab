import Foundation
import HTTP2Server
import Synchronization
import TestSupport

/// A push provider on loopback for the transport tests: the project's HTTP/2 server with real TLS
/// (a certificate from its own CA, for 127.0.0.1), answering each request as the test's script says
/// (an answer, REFUSED_STREAM, GOAWAY or silence), and telling what the client did.
///
/// Answers echo the request's `apns-id`, as APNs does, so a test can match them to requests. Each
/// request's path is its identity: `processed(_:)` counts how many times it was answered.
final class FakeProvider {
    /// A request as the script sees it.
    struct Arrival: Sendable {
        var path: String
        var bodySize: Int
        /// Whether a request with this path arrived before (a retry when not).
        var firstTime: Bool
        /// Its rank among all arrivals, from 1.
        var number: Int

        /// The number at the end of the path (`/3/device/17`: 17), or -1.
        var index: Int { Int(path.split(separator: "/").last ?? "") ?? -1 }
    }

    /// What the provider does with one request.
    enum Behaviour: Sendable {
        /// Answers with `status` and `body` (the request counts as processed).
        case answer(status: Int = 200, body: String = "")
        /// RST_STREAM(REFUSED_STREAM): not processed.
        case refuse
        /// GOAWAY(NO_ERROR) with this request the first above the last stream id: neither it nor any
        /// later request on the connection is processed.
        case goAway
        /// The connection stops reading and answering for good.
        case goSilent
    }

    typealias Script = @Sendable (Arrival) -> Behaviour

    private let directory: TemporaryDirectory
    private let server: HTTP2Server
    private let state: State

    /// The CA file a client must trust.
    var caFile: String { directory.file("ca.pem") }

    /// - Parameters:
    ///   - responseDelayMilliseconds: how long each answer is held back (the provider's distance).
    ///   - maxConcurrentStreamsUntilFirstAnswer: announced until a connection's first answer, as APNs.
    init(responseDelayMilliseconds: Int = 0, maxConcurrentStreams: UInt32 = 1000, maxConcurrentStreamsUntilFirstAnswer: UInt32? = nil,
         threads: Int = 1, script: @escaping Script = { _ in .answer() }) throws {
        directory = try TemporaryDirectory()
        let authority = try CertificateAuthority(name: "fake provider CA")
        let issued = try authority.serverCertificate(commonName: "fake provider", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        try authority.certificatePEM.write(toFile: directory.file("ca.pem"), atomically: true, encoding: .utf8)
        try (issued.certificatePEM + authority.certificatePEM).write(toFile: directory.file("server.pem"), atomically: true, encoding: .utf8)
        try issued.key.privatePEM().write(toFile: directory.file("server-key.pem"), atomically: true, encoding: .utf8)
        let tls = try TLSServerContext(certificateChain: directory.file("server.pem"), privateKey: directory.file("server-key.pem"))
        server = try HTTP2Server(listeners: [.init(port: 0)], tls: tls, threads: threads,
                                 responseDelayNanoseconds: Int64(responseDelayMilliseconds) * 1_000_000,
                                 maxConcurrentStreams: maxConcurrentStreams,
                                 maxConcurrentStreamsUntilFirstAnswer: maxConcurrentStreamsUntilFirstAnswer)
        state = State(script: script)
        server.start(handler: Handler(state: state))
    }

    /// Stops the server and closes every connection.
    func stop() { server.stop() }

    /// `https://127.0.0.1:<port><path>`.
    func url(_ path: String) -> String { "https://127.0.0.1:\(server.ports[0])\(path)" }

    /// Replaces the script for the requests that arrive from now on.
    func setScript(_ script: @escaping Script) { state.script.withLock { $0 = script } }

    /// A CA file the provider's certificate does not come from.
    func strangerCAFile() throws -> String {
        let stranger = try CertificateAuthority(name: "stranger CA")
        try stranger.certificatePEM.write(toFile: directory.file("stranger.pem"), atomically: true, encoding: .utf8)
        return directory.file("stranger.pem")
    }

    /// How many times the request with `path` was answered (processed).
    func processed(_ path: String) -> Int { state.processed.withLock { $0[path, default: 0] } }
    /// How many of the server's loop threads served a request so far.
    var loopsServing: Int { state.loops.withLock { $0.count } }
    /// Requests received on each connection so far, ordered by connection id.
    var requestsPerConnection: [Int] { state.connections.withLock { $0.sorted { $0.key < $1.key }.map(\.value) } }
    /// Requests that sent header `name` as a never-indexed literal (HPACK), so far.
    func neverIndexed(_ name: String) -> Int { state.neverIndexed.withLock { $0[name, default: 0] } }
    var connectionsAccepted: Int { server.acceptedConnections }
    var requestsReceived: Int { server.counters.requestsReceived }
    var resetsReceived: Int { server.counters.resetsReceived }
    var pingsReceived: Int { server.counters.pingsReceived }
    var streamsRefused: Int { server.counters.streamsRefused }
    var sessionsResumed: Int { server.counters.sessionsResumed }
    var mostStreamsOpen: Int { server.counters.mostStreamsOpen }
    var mostStreamsOpenOnAConnection: Int { server.counters.mostStreamsOpenOnAConnection }

    final class State: Sendable {
        let script: Mutex<Script>
        let arrivals = Mutex<(count: Int, paths: Set<String>)>((0, []))
        let processed = Mutex<[String: Int]>([:])
        /// Header name → requests that sent it as a never-indexed literal.
        let neverIndexed = Mutex<[String: Int]>([:])
        /// The server's loop threads that served a request.
        let loops = Mutex<Set<Int>>([])
        /// Connection id → requests received on it.
        let connections = Mutex<[UInt64: Int]>([:])

        init(script: @escaping Script) { self.script = Mutex(script) }
    }

    struct Handler: HTTP2Handler {
        let state: State

        func act(on request: HTTP2Request, context: HTTP2ConnectionContext) -> HTTP2Action {
            state.loops.withLock { _ = $0.insert(context.loop) }
            state.connections.withLock { $0[context.id, default: 0] += 1 }
            state.neverIndexed.withLock { counts in
                for name in request.neverIndexed { counts[name, default: 0] += 1 }
            }
            let (number, firstTime) = state.arrivals.withLock { arrivals in
                arrivals.count += 1
                return (arrivals.count, arrivals.paths.insert(request.path).inserted)
            }
            let arrival = Arrival(path: request.path, bodySize: request.body.count, firstTime: firstTime, number: number)
            switch state.script.withLock({ $0 })(arrival) {
            case .answer(let status, let body):
                state.processed.withLock { $0[request.path, default: 0] += 1 }
                return .respond(Self.answer(request, status: status, body: body))
            case .refuse: return .refuse
            case .goAway: return .goAway
            case .goSilent: return .goSilent
            }
        }

        /// The plain answer (what `act` answers when the script says `.answer()`).
        func respond(to request: HTTP2Request, context: HTTP2ConnectionContext) -> HTTP2Response {
            Self.answer(request, status: 200, body: "")
        }

        static func answer(_ request: HTTP2Request, status: Int, body: String) -> HTTP2Response {
            HTTP2Response(status: status, headers: [("apns-id", request.header("apns-id") ?? "-")], body: Array(body.utf8))
        }
    }
}
