/// One client connection, in the hands of its `EventLoop`.
///
/// `@unchecked Sendable` invariant: it is touched only on its loop's thread; the thread that
/// answers an offloaded request only carries it back to the loop (`EventLoop.post`).
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
        /// The request was offloaded: what comes meanwhile waits until it is answered.
        case offloaded
        /// The last answer said `Connection: close`: once it is sent, the connection shuts down its
        /// sending side and drops what still comes until the peer closes (so that the peer reads
        /// the answer instead of a reset).
        case closing
    }

    /// How an answer goes out.
    struct Framing {
        var keepAlive: Bool
        var omitBody: Bool
        /// An HTTP/1.0 request kept alive: the answer says `Connection: keep-alive`.
        var http10: Bool

        init(_ head: RequestHead) {
            // HTTP/1.0 has no chunked framing: such a message is read, answered, and the connection closed.
            keepAlive = head.keepAlive && !(head.chunked && head.minorVersion == 0)
            omitBody = head.method == "HEAD"
            http10 = head.minorVersion == 0
        }

        init(keepAlive: Bool, omitBody: Bool, http10: Bool) {
            self.keepAlive = keepAlive
            self.omitBody = omitBody
            self.http10 = http10
        }

        /// The framing of a refusal that closes the connection.
        static let closing = Framing(keepAlive: false, omitBody: false, http10: false)
    }

    let fd: Int32
    /// The connection's entry in the server's `ConnectionGuard`.
    let id: UInt
    let address: String

    var input: [UInt8] = []
    /// How much of `input` requests have taken.
    var parsed = 0
    /// How much of `input` was there when a head was last looked for.
    var scanned = 0
    var phase = Phase.head
    /// Bytes not yet sent, from `written` on.
    var output: [UInt8] = []
    var written = 0
    var watchingOutput = false
    /// Reading stopped with bytes left in the socket (`EventLoop.inputLimit`): no new edge comes
    /// for them, so the loop reads again once it has taken what it holds.
    var readPaused = false
    /// The peer sent its FIN: answer what came before it, then close.
    var peerDone = false
    /// An event said the peer hung up: reading goes on to the end of what it sent.
    var hungUp = false
    /// The socket failed (reset, or shut down by the deadline sweeper's `shutdown`).
    var failed = false
    var closed = false
    /// How the offloaded request's answer goes out.
    var offloaded = Framing.closing

    init(fd: Int32, id: UInt, address: String) {
        self.fd = fd
        self.id = id
        self.address = address
    }

    var hasOutput: Bool { written < output.count }
    var isClosing: Bool {
        if case .closing = phase { return true }
        return false
    }
    var unparsed: Int { input.count - parsed }
}
