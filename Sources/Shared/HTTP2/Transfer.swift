import Foundation

/// The responses of the requests one `send` call queued. `@unchecked Sendable` invariant: written
/// only by loop threads, each response once, with `lock` held; read by the sender after `wait`.
final class Batch: @unchecked Sendable {
    private var responses: [HTTP2Response?]
    private var remaining: Int
    private let lock = NSLock()
    private let done = DispatchSemaphore(value: 0)

    init(count: Int) {
        responses = Array(repeating: nil, count: count)
        remaining = count
        if count == 0 { done.signal() }
    }

    /// Stores the response at `index`; the last one wakes the sender.
    func set(_ index: Int, _ response: HTTP2Response) {
        lock.lock()
        responses[index] = response
        remaining -= 1
        let last = remaining == 0
        lock.unlock()
        if last { done.signal() }
    }

    /// Blocks until every response is in.
    func wait() -> [HTTP2Response] {
        done.wait()
        return responses.map { $0 ?? .failure("no response", requestSent: true) }
    }
}

/// One request on its way: queued, on a stream, or queued again after its stream was refused.
/// `@unchecked Sendable` invariant: created by the sender, then touched only by one loop's thread
/// until it is finished.
final class Transfer: @unchecked Sendable {
    let request: HTTP2Request
    let origin: Origin
    let path: String
    private let batch: Batch
    private let index: Int
    /// When it was queued (its timeout counts from then) and when its stream started.
    let queued: Double
    var started = 0.0
    /// Times a server refused its stream unprocessed (REFUSED_STREAM, or above a GOAWAY's last id).
    var refusals = 0
    /// Sent alone on a connection opened to find out whether an origin that failed is back.
    var isProbe = false

    init(request: HTTP2Request, origin: Origin, path: String, batch: Batch, index: Int, now: Double) {
        self.request = request
        self.origin = origin
        self.path = path
        self.batch = batch
        self.index = index
        queued = now
    }

    var deadline: Double { queued + Double(request.timeoutMilliseconds) / 1000 }

    func finish(_ response: HTTP2Response) { batch.set(index, response) }
}
