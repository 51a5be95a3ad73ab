/// How the providers talk HTTP/2 to APNs and FCM: batches of requests out, responses back in the
/// same order. `NGHTTP2Transport` is the implementation; a test may put any other behind it.
public protocol HTTP2Transport: Sendable {
    /// Sends every request (multiplexed) and blocks until each has a response or a transport error.
    func send(_ requests: [HTTP2Request]) -> [HTTP2Response]
    /// Fails what is queued and releases the connections. Called once, at shutdown.
    func close()
}

/// One HTTP/2 request.
public struct HTTP2Request: Sendable {
    public var url: String
    /// `name: value` lines of this request only, sent before `sharedHeaders` and never indexed by
    /// HPACK (their values change from one request to the next).
    public var headers: [String]
    /// Lines many requests share (parsed once instead of once per request).
    public var sharedHeaders: HTTP2HeaderList?
    public var body: [UInt8]
    public var timeoutMilliseconds: Int

    public init(url: String, headers: [String] = [], sharedHeaders: HTTP2HeaderList? = nil, body: [UInt8], timeoutMilliseconds: Int = 30_000) {
        self.url = url
        self.headers = headers
        self.sharedHeaders = sharedHeaders
        self.body = body
        self.timeoutMilliseconds = timeoutMilliseconds
    }
}

/// What came back: a status, lower-cased headers and a body, or a transport error (status 0).
public struct HTTP2Response: Sendable {
    public var status: Int
    public var headers: HTTP2Headers
    public var body: [UInt8]
    public var transportError: String?
    /// On a transport error: whether the whole request had been handed to the connection, so that the
    /// server may have acted on it (the outcome is unknown). False when it never left.
    public var requestSent: Bool
    /// On a transport error: the host resolved to an address the transport refuses to connect to
    /// (`HTTP2ClientSettings.refusesPrivateAddresses`); the request never left.
    public var addressRefused: Bool

    public init(status: Int, headers: HTTP2Headers, body: [UInt8], transportError: String?, requestSent: Bool = false,
                addressRefused: Bool = false) {
        self.status = status
        self.headers = headers
        self.body = body
        self.transportError = transportError
        self.requestSent = requestSent
        self.addressRefused = addressRefused
    }

    /// A transport error.
    public static func failure(_ error: String, requestSent: Bool = false) -> HTTP2Response {
        HTTP2Response(status: 0, headers: [:], body: [], transportError: error, requestSent: requestSent)
    }

    /// A request not sent because its host resolved to a refused address.
    public static func refused(_ error: String) -> HTTP2Response {
        HTTP2Response(status: 0, headers: [:], body: [], transportError: error, addressRefused: true)
    }
}

/// What a transport reports as it goes, for the provider metrics: each request's duration in seconds,
/// and each new connection.
public struct HTTP2Events: Sendable {
    public var requestFinished: @Sendable (Double) -> Void
    public var connectionOpened: @Sendable () -> Void

    public init(requestFinished: @escaping @Sendable (Double) -> Void, connectionOpened: @escaping @Sendable () -> Void) {
        self.requestFinished = requestFinished
        self.connectionOpened = connectionOpened
    }
}
