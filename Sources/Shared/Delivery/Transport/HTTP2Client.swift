internal import CCurl

/// One HTTP/2 request.
public struct HTTP2Request: Sendable {
    public var url: String
    /// `name: value` lines of this request only, sent before `sharedHeaders`.
    public var headers: [String]
    /// Lines many requests share (built once into libcurl's list instead of once per request).
    public var sharedHeaders: HTTP2HeaderList?
    public var body: [UInt8]
    /// Open a new connection for this request (after 5xx or a broken connection).
    public var freshConnection: Bool
    public var timeoutMilliseconds: Int

    public init(url: String, headers: [String] = [], sharedHeaders: HTTP2HeaderList? = nil, body: [UInt8], freshConnection: Bool = false,
                timeoutMilliseconds: Int = 30_000) {
        self.url = url
        self.headers = headers
        self.sharedHeaders = sharedHeaders
        self.body = body
        self.freshConnection = freshConnection
        self.timeoutMilliseconds = timeoutMilliseconds
    }
}

/// `name: value` header lines in libcurl's list form, shared by the requests of a batch.
///
/// `@unchecked Sendable` invariant: the list is never changed after `init`; libcurl only reads it,
/// and a transfer links its own lines in front of it without touching its nodes.
public final class HTTP2HeaderList: @unchecked Sendable {
    let list: UnsafeMutablePointer<curl_slist>?

    public init(_ lines: [String]) {
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines { list = curl_slist_append(list, line) }
        self.list = list
    }

    deinit { curl_slist_free_all(list) }
}

/// What came back: a status, lower-cased headers and a body, or a transport error (status 0).
public struct HTTP2Response: Sendable {
    public var status: Int
    public var headers: [String: String]
    public var body: [UInt8]
    public var transportError: String?
}

/// An HTTP/2-over-TLS client: `threads` libcurl loops (`HTTP2Loop`), each with its own thread,
/// multi handle and share of the connections and in-flight transfers. libcurl's per-transfer work
/// is the bulk of a push's CPU, so one loop caps a worker at what one core does; a second lets the
/// worker use the machine's second core. `send` blocks the caller until every response of its batch
/// is in.
public final class HTTP2Client: Sendable {
    private let loops: [HTTP2Loop]

    /// `maxConnections` and `maxInFlight` are totals, split evenly over the threads (at least one
    /// connection and one transfer each).
    public init(name: String, threads: Int = 1, maxConnections: Int, maxInFlight: Int, caFile: String?,
                observe: (@Sendable (Double) -> Void)? = nil) {
        let count = max(1, threads)
        loops = (0..<count).map { _ in
            HTTP2Loop(name: name, maxConnections: max(1, maxConnections / count), maxInFlight: max(1, maxInFlight / count),
                      caFile: caFile, observe: observe)
        }
    }

    /// Sends every request (multiplexed) and returns the responses in the same order: each loop
    /// takes one contiguous part of the requests.
    public func send(_ requests: [HTTP2Request]) -> [HTTP2Response] {
        let batches = loops.indices.map { index in
            loops[index].start(Array(requests[index * requests.count / loops.count ..< (index + 1) * requests.count / loops.count]))
        }
        return batches.flatMap { $0.wait() }
    }

    /// Fails what is queued, ends the threads and frees the multi handles.
    public func close() {
        for loop in loops { loop.close() }
    }
}
