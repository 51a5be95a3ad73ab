import Synchronization

/// One client connection. Its loop's thread owns everything but `exchange`; the thread that
/// answers an offloaded request meets the loop there, under its lock.
///
/// `@unchecked Sendable` invariant: the fields other than `exchange` are touched only on the
/// owning loop's thread; the answering thread reads `fd`, `id` and `loop` (constants) and
/// `exchange` under its lock.
final class HTTPConnection: @unchecked Sendable {
    /// Where the connection stands in reading its requests.
    enum Phase {
        /// Waiting for (the rest of) a request head.
        case head
        /// The head is in; `length` body bytes are to follow.
        case body(RequestHead, length: Int)
        case chunked(RequestHead, ChunkedBody)
        /// A body refused with 413 is read and dropped.
        case discard(remaining: Int)
        /// The request was offloaded: nothing more is read into requests until it is answered.
        case offloaded
    }

    /// An offloaded request, between the loop and the thread that answers it.
    struct Exchange {
        /// The request waits for its answer.
        var waiting = false
        /// The answering thread may send the answer itself: nothing else is queued for output.
        var direct = false
        /// The loop saw bytes or a hang-up meanwhile: the answer goes through the loop, which then
        /// goes on with them.
        var deferred = false
        var keepAlive = true
        var omitBody = false
    }

    let fd: Int32
    /// The connection's entry in the server's `ConnectionGuard`.
    let id: UInt
    let address: String
    /// Strong: an answer may come after the server stopped.
    let loop: EventLoop

    var input: [UInt8] = []
    /// How much of `input` requests have taken.
    var parsed = 0
    /// How far `input` was looked at for the end of a head line.
    var scanned = 0
    var phase = Phase.head
    /// Bytes not yet sent, from `written` on.
    var output: [UInt8] = []
    var written = 0
    var watchingOutput = false
    /// Close once `output` is sent (the last answer said `Connection: close`).
    var closeWhenWritten = false
    /// The peer sent its FIN, or the socket failed.
    var peerClosed = false
    var closed = false
    let exchange = Mutex(Exchange())

    init(fd: Int32, id: UInt, address: String, loop: EventLoop) {
        self.fd = fd
        self.id = id
        self.address = address
        self.loop = loop
    }

    var hasOutput: Bool { written < output.count }
}
