/// One HTTP/2 request as the server received it, whole.
public struct HTTP2Request: Sendable {
    public var method: String
    public var path: String
    /// Header fields in the order received, names in lower case (HTTP/2 sends them so), pseudo-headers
    /// other than `:method` and `:path` included.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]
    /// Names of the fields (`:path` included) the client sent as never-indexed literals (HPACK), in
    /// the order received: what a test reads to see what a client keeps out of the dynamic table.
    public var neverIndexed: [String]

    public init(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8], neverIndexed: [String] = []) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.neverIndexed = neverIndexed
    }

    /// The first value of header `name` (lower case).
    public func header(_ name: String) -> String? { headers.first { $0.name == name }?.value }

    /// How many times header `name` was sent.
    public func count(_ name: String) -> Int { headers.reduce(0) { $0 + ($1.name == name ? 1 : 0) } }
}

/// The answer to an `HTTP2Request`.
public struct HTTP2Response: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// What one connection keeps between its requests: its number, the listener it came through, and
/// whatever the handler attaches (such as the provider token a connection authenticated with).
/// Used only on the thread that serves the connection.
public final class HTTP2ConnectionContext {
    /// Unique in the server's lifetime.
    public let id: UInt64
    /// The index of the listener (in `HTTP2Server.init`'s `listeners`) the connection came through.
    public let listener: Int
    /// The index of the loop thread that serves the connection.
    public let loop: Int
    /// The handler's own state for this connection.
    public var attachment: AnyObject?

    init(id: UInt64, listener: Int, loop: Int) {
        self.id = id
        self.listener = listener
        self.loop = loop
    }
}

/// What the server does with a request: answer it, or misbehave as a provider sometimes does.
public enum HTTP2Action: Sendable {
    /// Answers the request (after the server's response delay).
    case respond(HTTP2Response)
    /// Resets the stream at once with RST_STREAM(REFUSED_STREAM): the request was not processed, and
    /// a client may send it again.
    case refuse
    /// Sends GOAWAY(NO_ERROR) whose last-stream-id is the last stream handed to the handler before
    /// this one: this request and every later one on the connection are not processed (the client
    /// must send them again elsewhere); the connection closes once the streams at or below that id
    /// are answered.
    case goAway
    /// Stops reading and writing on the connection for good: no answer to this request or to any
    /// other, no PING acknowledgement, and no notice when the client gives up. The socket closes
    /// when the server stops.
    case goSilent
}

/// Answers requests. Called on the server's loop threads, several at once: keep shared state
/// thread-safe, and per-connection state in `context.attachment`.
public protocol HTTP2Handler: Sendable {
    func respond(to request: HTTP2Request, context: HTTP2ConnectionContext) -> HTTP2Response
    /// What to do with `request`; by default, answer it with `respond(to:context:)`. A handler that
    /// plays a failing provider returns a fault instead.
    func act(on request: HTTP2Request, context: HTTP2ConnectionContext) -> HTTP2Action
}

extension HTTP2Handler {
    public func act(on request: HTTP2Request, context: HTTP2ConnectionContext) -> HTTP2Action {
        .respond(respond(to: request, context: context))
    }
}
