internal import CEventPoll
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Core

/// Why the HTTP server could not start.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public let errno: Int32
    public var description: String { "\(message) (errno \(errno): \(String(cString: strerror(errno))))" }
}

/// Where a request is handled.
public enum HTTPDispatch: Sendable {
    /// On the I/O thread that read it: for quick, non-blocking work (reads).
    case inline
    /// Handed to the server's `offload` function while the connection waits: for work that waits,
    /// such as writes that share a group commit. The I/O threads keep serving others meanwhile.
    case offload
}

/// How an offloaded request is answered, once, from any thread.
public struct Responder: Sendable {
    let answer: @Sendable (Answer) -> Void

    /// An offloaded request's answer as it reaches the connection's I/O thread.
    enum Answer {
        case ready(HTTPResponse)
        case made(@Sendable () -> HTTPResponse)
    }

    /// Answers with `response`.
    public func callAsFunction(_ response: HTTPResponse) { answer(.ready(response)) }

    /// Answers with what `make` returns, called on the connection's I/O thread, which also releases
    /// `make` and what it holds: the answering thread (the SQLite writer, for a batch of writes)
    /// only queues it.
    public func making(_ make: @escaping @Sendable () -> HTTPResponse) { answer(.made(make)) }
}

/// An HTTP/1.1 server: `settings.threads` event loops (epoll), keep-alive and pipelining. A request
/// head that breaks RFC 9112 (`RequestHead`) is answered 400, 414 or 431 and its connection closed
/// before any handler runs, so nothing pipelined behind it is read. Bodies come with Content-Length
/// or chunked; those larger than `bodyLimit` allows for their method and path (by default
/// `maxBodyBytes`) are answered 413 without reaching a handler. `classify` decides per request
/// whether `handler` runs inline on the loop's thread, or `offload` takes the request and answers
/// later from any thread: the answer goes back to the connection's loop, which sends it, so the
/// answering thread (the SQLite writer) spends one queue append per answer and one wake-up per loop
/// for a whole batch. Connections that miss the
/// header or body deadline are cut off, and at `connectionLimit` new connections push out those
/// still waiting for headers, or get 503 (`ConnectionTable`).
///
/// `@unchecked Sendable` invariant: `loops`, `listener` and `finished` are written only by
/// `start`/`stop`, which the owner calls from one thread; the closures are immutable and `@Sendable`.
public final class HTTPServer: @unchecked Sendable {
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse
    /// Takes a request and answers it through `respond` exactly once, from any thread.
    public typealias Offload = @Sendable (HTTPRequest, _ respond: Responder) -> Void
    /// The answer the server itself gives before any handler runs (413 for a body over the limit,
    /// 503 while stopping), in the reply shape the application's clients read.
    public typealias Refusal = @Sendable (_ status: Int, _ message: String) -> HTTPResponse

    let settings: HTTPSettings
    let refusal: Refusal
    let classify: @Sendable (HTTPRequest) -> HTTPDispatch
    /// The largest body a request with this method and path may send.
    let bodyLimit: @Sendable (_ method: String, _ path: String) -> Int
    let handler: Handler
    let offload: Offload
    /// Offloaded requests not yet answered: `stop` waits for them.
    let unanswered = Atomic<Int>(0)
    /// Set by `stop`: requests that would be offloaded are answered 503 instead.
    let stopping = Atomic<Bool>(false)
    let connections: ConnectionGuard
    /// Which loop the next accepted connection goes to.
    private let nextLoop = Atomic<Int>(0)
    private var loops: [EventLoop] = []
    private var listener: Int32 = -1
    private var finished: [DispatchSemaphore] = []

    public init(settings: HTTPSettings, classify: @escaping @Sendable (HTTPRequest) -> HTTPDispatch = { _ in .inline },
                offload: Offload? = nil, bodyLimit: (@Sendable (_ method: String, _ path: String) -> Int)? = nil,
                refusal: @escaping Refusal = { status, message in .json(["error": .string(message)], status: status) },
                counters: HTTPConnectionCounters = HTTPConnectionCounters(),
                handler: @escaping Handler) {
        self.settings = settings
        self.bodyLimit = bodyLimit ?? { [maxBodyBytes = settings.maxBodyBytes] _, _ in maxBodyBytes }
        self.connections = ConnectionGuard(limits: ConnectionTable.Limits(settings), counters: counters)
        self.refusal = refusal
        self.classify = classify
        self.handler = handler
        self.offload = offload ?? { request, respond in respond(handler(request)) }
    }

    /// The port the server listens on (differs from the configured one when that was 0).
    public private(set) var port: UInt16 = 0

    public func start() throws(HTTPServerError) {
        let (socket, bound) = try Self.listen(host: settings.host, port: settings.port, text: settings.listen)
        listener = socket
        port = bound
        loops = (0..<max(settings.threads, 1)).map { _ in EventLoop(server: self, listener: socket) }
        for (index, loop) in loops.enumerated() {
            let done = DispatchSemaphore(value: 0)
            finished.append(done)
            let thread = Thread(named: "http-\(index)") {
                loop.run()
                done.signal()
            }
            thread.start()
        }
        connections.startSweeping()
    }

    /// Stops accepting connections (closes the listening socket), lets every offloaded request get
    /// its answer (up to 30 s), then closes every connection and waits for the loops. Stop whatever serves `offload` only after
    /// this returns.
    public func stop() {
        guard listener >= 0 else { return }
        stopping.store(true, ordering: .sequentiallyConsistent)
        // New connections are refused at once (not left in the kernel's queue) once no loop watches
        // the listening socket any more.
        let unwatched = DispatchSemaphore(value: 0)
        for loop in loops { loop.post(.stopAccepting(done: unwatched)) }
        for _ in loops { unwatched.wait() }
        close(listener)
        listener = -1
        let deadline = monotonicSeconds() + 30
        while unanswered.load(ordering: .sequentiallyConsistent) > 0, monotonicSeconds() < deadline { usleep(5_000) }
        // Each loop sends the answers posted to it before it takes `stop`.
        for loop in loops { loop.post(.stop) }
        for done in finished { done.wait() }
        loops = []
        finished = []
        connections.stopSweeping()
    }

    deinit { stop() }

    /// The loop the next accepted connection belongs to: round robin, so that a burst of
    /// connections taken by one loop's accept is spread over all of them.
    func loopForNextConnection() -> EventLoop {
        loops[nextLoop.add(1, ordering: .relaxed).oldValue % loops.count]
    }

    /// The listening socket on `host:port` and the port it got.
    private static func listen(host: String, port: UInt16, text listen: String) throws(HTTPServerError) -> (Int32, UInt16) {
        do {
            return try ListeningSocket.open(host: host, port: port)
        } catch {
            let message = error.step == .address ? "cannot listen on \(listen): not an IPv\(host.contains(":") ? 6 : 4) address" : "cannot listen on \(listen)"
            throw HTTPServerError(message: message, errno: error.errno)
        }
    }
}
