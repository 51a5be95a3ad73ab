/// How an `NGHTTP2Transport` uses its connections.
public struct HTTP2ClientSettings: Sendable {
    /// Connections kept open to each origin (scheme, host and port) while there is work for them.
    public var connections: Int
    /// Requests on the network at once, over all origins; the rest wait in the transport's queue.
    /// Each connection also carries no more streams than its server announces, and at first no
    /// more than its share of `maxInFlight` (split over the origin's ready connections, rounded up).
    public var maxInFlight: Int
    /// A PEM file of CAs trusted in addition to the system's store (tests use a self-signed one).
    public var caFile: String?
    /// Event-loop threads; each owns its own connections (at least one per origin).
    public var threads: Int
    /// A connection that received nothing for this long is sent a PING.
    public var pingIntervalSeconds: Double
    /// A connection whose PING is not answered within this time is dead: what it had on the network
    /// fails as possibly delivered, and what it had not sent goes to another connection.
    public var pingTimeoutSeconds: Double
    /// TCP connection and TLS handshake, together.
    public var connectTimeoutSeconds: Double
    /// Never connect to an address of this host or a private network (`IPAddress.isPrivate`): a
    /// request whose host resolves to one fails at once, not sent, with `addressRefused` (for
    /// URLs that clients supply, such as Web Push endpoints).
    public var refusesPrivateAddresses = false
    /// Offer `http/1.1` beside `h2` in ALPN, and speak HTTP/1.1 to a server that selects it or
    /// selects nothing (for Web Push services, which RFC 8030 lets speak either). Such an origin
    /// gets `ClientLoop.http1ConnectionsPerOrigin` keep-alive connections, one request in flight on
    /// each. Off, a server that does not select `h2` is a connection failure.
    public var offersHTTP1 = false

    public init(connections: Int, maxInFlight: Int, caFile: String? = nil, threads: Int = 1, pingIntervalSeconds: Double = 10,
                pingTimeoutSeconds: Double = 5, connectTimeoutSeconds: Double = 10) {
        self.connections = max(1, connections)
        self.maxInFlight = max(1, maxInFlight)
        self.caFile = caFile
        self.threads = max(1, threads)
        self.pingIntervalSeconds = pingIntervalSeconds
        self.pingTimeoutSeconds = pingTimeoutSeconds
        self.connectTimeoutSeconds = connectTimeoutSeconds
    }
}
