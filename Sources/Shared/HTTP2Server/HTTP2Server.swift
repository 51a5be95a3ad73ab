import Foundation
import Synchronization
import Core
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/2 server over TLS (ALPN `h2` only): libnghttp2 sessions on epoll loops, one per thread,
/// each with its own SO_REUSEPORT listening sockets; a loop that accepts a connection while another
/// serves fewer hands it over, so connections are spread evenly. It answers every request through one
/// `HTTP2Handler`, optionally after a fixed delay (a distant server's round trip), without holding
/// up the loop meanwhile.
public final class HTTP2Server: Sendable {
    /// Where to listen: a numeric IPv4 address and a port (0 picks a free one).
    public struct Listener: Sendable {
        public var host: String
        public var port: UInt16
        public init(host: String = "127.0.0.1", port: UInt16) {
            self.host = host
            self.port = port
        }
    }

    /// The ports listened on, in the order of the listeners given.
    public let ports: [UInt16]
    /// What clients did, since the start.
    public let counters = HTTP2ServerCounters()
    let stopping = Atomic<Bool>(false)
    private let open = Atomic<Int>(0)
    private let accepted = Atomic<Int>(0)
    private let sockets: Lock<[[Int32]]>
    private let settings: ServerLoop.Settings
    private let loops: Lock<[ServerLoop]> = Lock([])
    private let finished = DispatchGroup()

    /// Binds every listener for every loop thread (so a taken port fails here); `start(handler:)` serves.
    /// - Parameters:
    ///   - threads: event-loop threads (at least 1).
    ///   - responseDelayNanoseconds: how long each answer is held back.
    ///   - maxConcurrentStreams: the SETTINGS_MAX_CONCURRENT_STREAMS each connection announces.
    ///   - maxConcurrentStreamsUntilFirstAnswer: when set, what each connection announces instead until
    ///     its first answer is sent, as APNs announces 1 until a request with a valid provider token.
    public init(listeners: [Listener], tls: TLSServerContext, threads: Int, responseDelayNanoseconds: Int64 = 0,
                maxConcurrentStreams: UInt32 = 1000, maxConcurrentStreamsUntilFirstAnswer: UInt32? = nil) throws(HTTP2ServerError) {
        var sockets: [[Int32]] = Array(repeating: [], count: max(1, threads))
        var ports: [UInt16] = []
        do {
            for listener in listeners {
                var port = listener.port
                for thread in sockets.indices {
                    let (fd, bound) = try Self.listen(host: listener.host, port: port)
                    sockets[thread].append(fd)
                    port = bound
                }
                ports.append(port)
            }
        } catch {
            for fd in sockets.joined() { close(fd) }
            throw error
        }
        self.ports = ports
        self.sockets = Lock(sockets)
        settings = ServerLoop.Settings(tls: tls, delayNanoseconds: responseDelayNanoseconds, maxConcurrentStreams: maxConcurrentStreams,
                                       maxConcurrentStreamsUntilFirstAnswer: maxConcurrentStreamsUntilFirstAnswer)
    }

    /// Starts the loop threads, answering every request through `handler`. Call once.
    public func start(handler: any HTTP2Handler) {
        let made = sockets.withLock { sockets in
            defer { sockets.removeAll() }
            return sockets.enumerated().map { index, fds in
                ServerLoop(server: self, listeners: fds, settings: settings, handler: handler, index: index)
            }
        }
        loops.withLock { $0 = made }
        for (index, loop) in made.enumerated() {
            finished.enter()
            let thread = Thread(named: "http2-\(index)") { [finished] in
                loop.run()
                finished.leave()
            }
            thread.start()
        }
    }

    /// Stops the loops (within about 100 ms) and closes every connection and listening socket.
    public func stop() {
        stopping.store(true, ordering: .relaxed)
        finished.wait()
        loops.withLock { $0.removeAll() }
    }

    /// The loops serving since `start`, for a loop to hand a connection to another.
    var runningLoops: [ServerLoop] { loops.withLock { $0 } }

    /// Connections open now.
    public var openConnections: Int { open.load(ordering: .relaxed) }
    /// Connections accepted since the start.
    public var acceptedConnections: Int { accepted.load(ordering: .relaxed) }

    func connectionOpened() {
        open.add(1, ordering: .relaxed)
        accepted.add(1, ordering: .relaxed)
    }

    func connectionClosed() { open.subtract(1, ordering: .relaxed) }

    /// A socket listening on `host:port` (an IPv4 literal; several may share the port) and the
    /// port it got.
    static func listen(host: String, port: UInt16) throws(HTTP2ServerError) -> (Int32, UInt16) {
        guard !host.contains(":") else { throw HTTP2ServerError("cannot listen on \(host): not an IPv4 address") }
        do {
            return try ListeningSocket.open(host: host, port: port, reusePort: true)
        } catch {
            let reason = String(cString: strerror(error.errno))
            switch error.step {
            case .address: throw HTTP2ServerError("cannot listen on \(host): not an IPv4 address")
            case .socket: throw HTTP2ServerError("cannot open a socket: \(reason)")
            case .bind: throw HTTP2ServerError("cannot listen on \(host):\(port): \(reason)")
            }
        }
    }
}
