import Core

/// An HTTP/2-over-TLS client on libnghttp2 and OpenSSL: `threads` event loops (`ClientLoop`), each
/// with its own connections to every origin it is asked to reach. It honours each server's SETTINGS
/// (concurrent streams, window sizes, frame size), never resets a finished stream, keeps idle
/// connections alive with PING and drops one whose PING goes unanswered, treats GOAWAY and
/// REFUSED_STREAM as "not processed" (sent again on another stream), resumes TLS sessions, and
/// reopens broken connections after `ConnectionHealth`'s back-off. `send` blocks its caller until
/// every response of its batch is in; callers on several threads share the connections.
public final class NGHTTP2Transport: HTTP2Transport {
    private let loops: [ClientLoop]

    /// `settings.connections` and `maxInFlight` are totals, split evenly over the threads (at least
    /// one connection per origin and one stream each).
    public init(name: String, settings: HTTP2ClientSettings, events: HTTP2Events? = nil) throws(HTTP2TransportError) {
        let tls = try ClientTLS(caFile: settings.caFile, offersHTTP1: settings.offersHTTP1)
        let count = settings.threads
        var share = settings
        share.connections = max(1, settings.connections / count)
        share.maxInFlight = max(1, settings.maxInFlight / count)
        loops = (0..<count).map { _ in ClientLoop(name: name, settings: share, tls: tls, events: events) }
    }

    /// Sends every request (multiplexed) and returns the responses in the same order: each loop
    /// takes one contiguous part of the requests.
    public func send(_ requests: [HTTP2Request]) -> [HTTP2Response] {
        let batch = Batch(count: requests.count)
        let now = monotonicSeconds()
        var shares = [[Transfer]](repeating: [], count: loops.count)
        var splitter = Origin.Splitter()
        for (index, request) in requests.enumerated() {
            guard let (origin, path) = splitter.split(request.url) else {
                batch.set(index, .failure("not an https URL with a host"))
                continue
            }
            shares[index * loops.count / requests.count].append(
                Transfer(request: request, origin: origin, path: path, batch: batch, index: index, now: now))
        }
        for (loop, share) in zip(loops, shares) { loop.enqueue(share) }
        return batch.wait()
    }

    /// Fails what is queued, ends the threads and closes the connections.
    public func close() {
        for loop in loops { loop.close() }
    }
}
