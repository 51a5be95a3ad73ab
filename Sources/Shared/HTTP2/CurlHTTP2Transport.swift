internal import CCurl

/// `name: value` header lines that many requests of a batch share. The libcurl transport builds
/// its list form once, here, instead of once per request.
///
/// `@unchecked Sendable` invariant: nothing changes after `init`; libcurl only reads the list, and a
/// transfer links its own lines in front of it without touching its nodes.
public final class HTTP2HeaderList: @unchecked Sendable {
    public let lines: [String]
    let list: UnsafeMutablePointer<curl_slist>?

    public init(_ lines: [String]) {
        self.lines = lines
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines { list = curl_slist_append(list, line) }
        self.list = list
    }

    deinit { curl_slist_free_all(list) }
}

/// An HTTP/2-over-TLS client: `threads` libcurl loops (`CurlLoop`), each with its own thread,
/// multi handle and share of the connections and in-flight transfers. libcurl's per-transfer work
/// is the bulk of a push's CPU, so one loop caps a worker at what one core does; a second lets the
/// worker use the machine's second core. `send` blocks the caller until every response of its batch
/// is in.
public final class CurlHTTP2Transport: HTTP2Transport {
    private let loops: [CurlLoop]

    /// `maxConnections` and `maxInFlight` are totals, split evenly over the threads (at least one
    /// connection and one transfer each).
    public init(name: String, threads: Int = 1, maxConnections: Int, maxInFlight: Int, caFile: String?, events: HTTP2Events? = nil) {
        let count = max(1, threads)
        loops = (0..<count).map { _ in
            CurlLoop(name: name, maxConnections: max(1, maxConnections / count), maxInFlight: max(1, maxInFlight / count),
                     caFile: caFile, events: events)
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
