/// One HTTP/2 request as the server received it, whole.
public struct HTTP2Request: Sendable {
    public var method: String
    public var path: String
    /// Header fields in the order received, names in lower case (HTTP/2 sends them so), pseudo-headers
    /// other than `:method` and `:path` included.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    public init(method: String, path: String, headers: [(name: String, value: String)], body: [UInt8]) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
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
    /// The handler's own state for this connection.
    public var attachment: AnyObject?

    init(id: UInt64, listener: Int) {
        self.id = id
        self.listener = listener
    }
}

/// Answers requests. Called on the server's loop threads, several at once: keep shared state
/// thread-safe, and per-connection state in `context.attachment`.
public protocol HTTP2Handler: Sendable {
    func respond(to request: HTTP2Request, context: HTTP2ConnectionContext) -> HTTP2Response
}
