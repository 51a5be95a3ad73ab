internal import CEventPoll
import Dispatch
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Core

/// One I/O thread of `HTTPServer`: an edge-triggered epoll over its connections and the shared
/// listening socket. It accepts connections (handing each to the loops in turn), reads requests,
/// runs inline handlers, writes answers, and closes connections.
///
/// An offloaded request's answer comes back through `post`, so only the loop's thread ever reads,
/// writes or closes a connection's socket: the thread that made the answer (the SQLite writer, for
/// a batch of writes) only queues it and signals the loop once, whatever the batch's size. A socket
/// is closed after its entry left the server's `ConnectionGuard` (which only ever shuts sockets
/// down, under its lock, while their entry is present).
///
/// `@unchecked Sendable` invariant: `connections` and the connections are touched only on the
/// loop's thread; other threads reach the loop only through `post`.
final class EventLoop: @unchecked Sendable {
    /// What other threads ask of the loop.
    enum Work {
        /// A connection accepted by another loop, entered in the `ConnectionGuard` under `id`.
        case adopt(fd: Int32, id: UInt, address: String)
        /// An offloaded request's answer.
        case answer(HTTPConnection, Responder.Answer)
        /// Stop watching the listening socket, then signal `done`.
        case stopAccepting(done: DispatchSemaphore)
        /// Close every connection and end the loop.
        case stop
    }

    /// What other threads have posted, and whether the loop has ended (then `post` itself closes a
    /// connection handed over and drops the rest).
    private struct Posted {
        var works: [Work] = []
        var ended = false
    }

    /// Past this many unsent bytes, a connection's further requests wait until the client reads.
    static let outputBacklog = 1 << 20
    static let readSize = 65_536

    /// Strong: the loop's thread uses it until the loop ends, which only `HTTPServer.stop` asks.
    let server: HTTPServer
    private let listener: Int32
    private let poll: Int32
    private let wakeup = Wakeup()
    private let posted = Mutex(Posted())
    private var connections: [Int32: HTTPConnection] = [:]
    private var scratch = [UInt8](repeating: 0, count: EventLoop.readSize)
    private var running = true
    private var accepting = true

    init(server: HTTPServer, listener: Int32) {
        self.server = server
        self.listener = listener
        poll = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(poll >= 0, "epoll_create1 failed: errno \(errno)")
        watch(listener, EPOLLIN.rawValue | EPOLLEXCLUSIVE.rawValue)
        watch(wakeup.fd, EPOLLIN.rawValue)
    }

    deinit { Glibc.close(poll) }

    /// Hands `work` to the loop's thread; the first work since the loop last looked wakes it.
    func post(_ work: Work) {
        let (first, ended) = posted.withLock { posted -> (Bool, Bool) in
            guard !posted.ended else { return (false, true) }
            posted.works.append(work)
            return (posted.works.count == 1, false)
        }
        if first { wakeup.signal() }
        if ended { drop(work) }
    }

    /// What becomes of work posted to a loop that has ended: a connection handed over is closed,
    /// the rest has nothing left to act on.
    private func drop(_ work: Work) {
        switch work {
        case .adopt(let fd, let id, _):
            server.connections.closed(id)
            Glibc.close(fd)
        case .stopAccepting(let done):
            done.signal()
        case .answer, .stop:
            break
        }
    }

    func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        while running {
            let count = events.withUnsafeMutableBufferPointer { epoll_wait(poll, $0.baseAddress, Int32($0.count), -1) }
            guard count >= 0 else { continue }
            for index in 0..<Int(count) {
                let event = events[index]
                if event.data.fd == listener {
                    if accepting { acceptConnections() }
                } else if event.data.fd == wakeup.fd {
                    wakeup.reset()
                    takePosted()
                } else if let connection = connections[event.data.fd] {
                    if event.events & EPOLLOUT.rawValue != 0 { flush(connection) }
                    if event.events & ~EPOLLOUT.rawValue != 0, !connection.closed {
                        readable(connection, hangUp: event.events & (EPOLLRDHUP.rawValue | EPOLLHUP.rawValue | EPOLLERR.rawValue) != 0)
                    }
                }
            }
        }
        for connection in Array(connections.values) { close(connection) }
        let left = posted.withLock { posted -> [Work] in
            posted.ended = true
            defer { posted.works = [] }
            return posted.works
        }
        for work in left { drop(work) }
    }

    private func watch(_ fd: Int32, _ events: UInt32, modify: Bool = false) {
        var event = epoll_event(events: events, data: epoll_data_t(fd: fd))
        epoll_ctl(poll, modify ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, &event)
    }

    private static let connectionEvents = EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLET.rawValue

    // MARK: Connections in and out

    private func acceptConnections() {
        while true {
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { accept(listener, $0, &length) }
            }
            if fd < 0 {
                if errno == EINTR { continue }
                // Out of descriptors: the listener stays readable, so pause instead of spinning.
                if errno == EMFILE || errno == ENFILE { usleep(10_000) }
                return
            }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            // Entered here, in the order connections came, which decides who is pushed out at the limit.
            guard let id = server.connections.opened(fd: fd) else {
                Glibc.close(fd)
                continue
            }
            let text = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { IPAddress(socketAddress: $0)?.description ?? "" }
            }
            let owner = server.loopForNextConnection()
            if owner === self { adopt(fd: fd, id: id, address: text) } else { owner.post(.adopt(fd: fd, id: id, address: text)) }
        }
    }

    private func adopt(fd: Int32, id: UInt, address: String) {
        let connection = HTTPConnection(fd: fd, id: id, address: address)
        connections[fd] = connection
        watch(fd, Self.connectionEvents)
        // Bytes that came with the connection raise no new edge.
        readable(connection, hangUp: false)
    }

    private func close(_ connection: HTTPConnection) {
        guard !connection.closed else { return }
        connection.closed = true
        server.connections.closed(connection.id)
        connections[connection.fd] = nil
        epoll_ctl(poll, EPOLL_CTL_DEL, connection.fd, nil)
        Glibc.close(connection.fd)
    }

    private func takePosted() {
        let works = posted.withLock { posted -> [Work] in
            defer { posted.works.removeAll(keepingCapacity: true) }
            return posted.works
        }
        for work in works {
            switch work {
            case .adopt(let fd, let id, let address):
                adopt(fd: fd, id: id, address: address)
            case .answer(let connection, .ready(let response)):
                deliver(connection, response)
            case .answer(let connection, .made(let make)):
                deliver(connection, make())
            case .stopAccepting(let done):
                epoll_ctl(poll, EPOLL_CTL_DEL, listener, nil)
                // A listener event already taken in this turn must not accept either: `stop` closes
                // the socket once every loop has signalled.
                accepting = false
                done.signal()
            case .stop:
                running = false
            }
        }
    }

    // MARK: Reading

    /// How many bytes past what requests have taken a connection may hold: a head and a read's
    /// worth, or a whole body with Content-Length.
    private func inputLimit(_ connection: HTTPConnection) -> Int {
        if case .body(_, let length) = connection.phase { return length + RequestHead.headLimit }
        return RequestHead.headLimit + Self.readSize
    }

    /// Reads what the socket holds (up to `inputLimit`), serves what it completes, and closes the
    /// connection when it is done. `hangUp`: the event said the peer closed, so reading goes on to
    /// the end even after a short read (now and whenever reading resumes).
    private func readable(_ connection: HTTPConnection, hangUp: Bool) {
        if hangUp { connection.hungUp = true }
        while !connection.closed {
            var received = 0
            connection.readPaused = false
            while true {
                if connection.unparsed >= inputLimit(connection) {
                    connection.readPaused = true
                    break
                }
                let count = scratch.withUnsafeMutableBytes { read(connection.fd, $0.baseAddress, $0.count) }
                if count > 0 {
                    received += count
                    // A closing connection drops what still comes.
                    if !connection.isClosing {
                        scratch.withUnsafeBufferPointer { connection.input.append(contentsOf: UnsafeBufferPointer(rebasing: $0[0..<count])) }
                    }
                    // A short read emptied the socket; more bytes raise a new edge.
                    if count < Self.readSize && !connection.hungUp { break }
                    continue
                }
                if count < 0, errno == EINTR { continue }
                if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { break }
                if count == 0 { connection.peerDone = true } else { connection.failed = true }
                break
            }
            switch connection.phase {
            case .body, .chunked, .discard: if received > 0 { server.connections.received(connection.id, bytes: received) }
            default: break
            }
            // What comes while a request is offloaded waits for its answer (`deliver`).
            if case .offloaded = connection.phase { return }
            let before = connection.unparsed
            process(connection)
            // Read on only when reading paused and serving made room.
            guard connection.readPaused, connection.unparsed < before else { break }
        }
        finish(connection)
    }

    /// Closes the connection when it is done: it failed, the peer left and everything it asked
    /// for is answered, or it is closing and the peer has closed too. One whose request is
    /// offloaded waits for the answer (`deliver`).
    private func finish(_ connection: HTTPConnection) {
        guard !connection.closed else { return }
        switch connection.phase {
        case .offloaded:
            return
        case .closing:
            if connection.failed || connection.peerDone && !connection.hasOutput { close(connection) }
        default:
            if connection.failed || connection.peerDone && !connection.hasOutput { close(connection) }
        }
    }

    /// Takes up a connection again once its answer went out or its output drained: what waited in
    /// the socket, then what waited in `input`.
    private func resume(_ connection: HTTPConnection) {
        if connection.readPaused {
            readable(connection, hangUp: false)
        } else {
            process(connection)
            finish(connection)
        }
    }

    // MARK: Requests

    /// Serves the complete requests in `input`, in order, until one is offloaded, the input runs
    /// out, too much output waits, or the socket failed.
    private func process(_ connection: HTTPConnection) {
        while !connection.closed, !connection.failed, connection.output.count - connection.written < Self.outputBacklog {
            let available = connection.unparsed
            switch connection.phase {
            case .offloaded:
                compact(connection)
                return
            case .closing:
                // Nothing more is served: what was read and not served is dropped, so that reading
                // (which now drops all it reads) is never held back by it.
                connection.input = []
                connection.parsed = 0
                connection.scanned = 0
                return
            case .head:
                guard available > 0, headMayBeDecided(connection) else { break }
                let parse = connection.input.withUnsafeBytes { RequestHead.parse(UnsafeRawBufferPointer(rebasing: $0[connection.parsed...])) }
                switch parse {
                case .incomplete:
                    break
                case .refused(let problem):
                    server.connections.busy(connection.id)
                    respond(connection, server.refusal(problem.status, "malformed request: \(problem.message)"), .closing)
                    continue
                case .complete(let head, let length):
                    connection.parsed += length
                    connection.scanned = connection.parsed
                    begin(connection, head)
                    continue
                }
            case .body(let head, let length):
                guard available >= length else { break }
                let body = Array(connection.input[connection.parsed..<connection.parsed + length])
                connection.parsed += length
                dispatch(connection, head, body: body)
                continue
            case .chunked(let head, var decoder):
                // Out of `phase` while it decodes, so that its body is not copied on write.
                connection.phase = .head
                let offset = connection.parsed
                var end = offset
                let step = connection.input.withUnsafeBytes { bytes in
                    var position = offset
                    defer { end = position }
                    return decoder.decode(bytes, offset: &position)
                }
                connection.parsed = end
                if decoder.tooLarge {
                    // Refused at once: a body that keeps coming would keep its deadline moving.
                    server.connections.busy(connection.id)
                    respond(connection, tooLarge(decoder.limit), .closing)
                    continue
                }
                switch step {
                case .needMore:
                    connection.phase = .chunked(head, decoder)
                case .malformed(let message):
                    server.connections.busy(connection.id)
                    respond(connection, server.refusal(400, "malformed request: \(message)"), .closing)
                    continue
                case .done:
                    dispatch(connection, head, body: decoder.body)
                    continue
                }
            case .discard(let remaining):
                let take = min(remaining, available)
                connection.parsed += take
                connection.phase = take == remaining ? .head : .discard(remaining: remaining - take)
                if take == remaining { continue }
            }
            break
        }
        compact(connection)
    }

    /// Whether the bytes that came since the head was last looked for can decide it: a blank line
    /// (or a bare LF, which the parser refuses) may have arrived, or the bytes crossed the request
    /// line's or the head's limit. So a head trickling in a byte at a time is parsed a few times,
    /// not once per byte.
    private func headMayBeDecided(_ connection: HTTPConnection) -> Bool {
        let from = max(connection.scanned - 2, connection.parsed)
        let seenBefore = max(connection.scanned - connection.parsed, 0)
        connection.scanned = connection.input.count
        let available = connection.unparsed
        if seenBefore <= RequestHead.requestLineLimit && available > RequestHead.requestLineLimit { return true }
        if seenBefore <= RequestHead.headLimit && available > RequestHead.headLimit { return true }
        var index = from
        while index < connection.input.count {
            if connection.input[index] == 0x0A {
                let next = index + 1
                if next == connection.input.count { return false }
                // "\n\n" is a bare LF the parser refuses; "\n\r" starts the blank line that ends
                // the head. A line in between is decided with the head's end.
                if connection.input[next] == 0x0A { return true }
                if connection.input[next] == 0x0D { return true }
            }
            index += 1
        }
        return false
    }

    /// Drops the bytes requests have taken from the front of `input`.
    private func compact(_ connection: HTTPConnection) {
        if connection.parsed == connection.input.count {
            connection.input.removeAll(keepingCapacity: connection.input.capacity <= Self.readSize)
            connection.scanned = 0
            connection.parsed = 0
        } else if connection.parsed >= Self.readSize {
            connection.input.removeFirst(connection.parsed)
            connection.scanned = max(connection.scanned - connection.parsed, 0)
            connection.parsed = 0
        }
    }

    /// A head is in: admit the request, check its body's size, and start reading the body.
    private func begin(_ connection: HTTPConnection, _ head: RequestHead) {
        guard server.connections.headersComplete(connection.id) else {
            server.connections.busy(connection.id)
            respond(connection, server.refusal(503, "too many connections; please retry"), .closing)
            return
        }
        let limit = server.bodyLimit(head.method, head.path)
        if let length = head.contentLength, length > limit {
            server.connections.busy(connection.id)
            var framing = HTTPConnection.Framing(head)
            // A client that waits for 100 Continue sends no body: the connection cannot go on.
            framing.keepAlive = framing.keepAlive && !head.expectsContinue
            respond(connection, tooLarge(limit), framing)
            if framing.keepAlive { connection.phase = .discard(remaining: length) }
            return
        }
        if head.expectsContinue, head.chunked || (head.contentLength ?? 0) > 0 {
            write(connection, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        if head.chunked {
            connection.phase = .chunked(head, ChunkedBody(limit: limit))
        } else if let length = head.contentLength, length > 0 {
            connection.phase = .body(head, length: length)
            // Up to a megabyte: a declared length is only a promise.
            connection.input.reserveCapacity(connection.parsed + min(length, 1 << 20))
        } else {
            dispatch(connection, head, body: [])
        }
    }

    private func tooLarge(_ limit: Int) -> HTTPResponse {
        server.refusal(413, "request body exceeds the limit of \(limit) bytes")
    }

    /// A whole request: runs it inline, or offloads it.
    private func dispatch(_ connection: HTTPConnection, _ head: RequestHead, body: [UInt8]) {
        server.connections.busy(connection.id)
        connection.phase = .head
        let request = HTTPRequest(method: head.method, path: head.path, headers: head.headers,
                                  query: head.method == "GET" ? head.query : [:], body: body, clientAddress: connection.address)
        let framing = HTTPConnection.Framing(head)
        guard server.classify(request) == .offload else {
            respond(connection, server.handler(request), framing)
            return
        }
        // Count first, then look at `stopping`: `stop` sets the flag before it reads the count, so a
        // request either is counted (and waited for) or sees the flag.
        server.unanswered.add(1, ordering: .sequentiallyConsistent)
        if server.stopping.load(ordering: .sequentiallyConsistent) {
            server.unanswered.subtract(1, ordering: .sequentiallyConsistent)
            respond(connection, server.refusal(503, "shutting down, please retry"), framing)
            return
        }
        connection.phase = .offloaded
        connection.offloaded = framing
        let server = server
        server.offload(request, Responder { [self, connection] answer in
            post(.answer(connection, answer))
            server.unanswered.subtract(1, ordering: .sequentiallyConsistent)
        })
    }

    /// Queues the answer; one that closes the connection ends its requests (`Phase.closing`).
    private func respond(_ connection: HTTPConnection, _ response: HTTPResponse, _ framing: HTTPConnection.Framing) {
        server.connections.answered(connection.id)
        let header: HTTPResponse.ConnectionHeader = !framing.keepAlive ? .close : framing.http10 ? .keepAlive : .none
        write(connection, response.wire(omitBody: framing.omitBody, connection: header))
        if !framing.keepAlive {
            connection.phase = .closing
            if !connection.hasOutput { shutdown(connection.fd, Int32(SHUT_WR)) }
        }
    }

    /// An offloaded request's answer: send it, then go on with what the client sent meanwhile.
    private func deliver(_ connection: HTTPConnection, _ response: HTTPResponse) {
        guard !connection.closed, case .offloaded = connection.phase else { return }
        connection.phase = .head
        respond(connection, response, connection.offloaded)
        resume(connection)
    }

    // MARK: Writing

    /// Sends `bytes` after whatever is queued; what the socket does not take waits for `EPOLLOUT`.
    private func write(_ connection: HTTPConnection, _ bytes: [UInt8]) {
        if connection.hasOutput {
            connection.output.append(contentsOf: bytes)
            return
        }
        let sent = bytes.withUnsafeBytes { send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        if sent == bytes.count { return }
        if sent < 0, errno != EAGAIN, errno != EWOULDBLOCK, errno != EINTR {
            connection.failed = true
            return
        }
        connection.output = Array(bytes[max(sent, 0)...])
        connection.written = 0
        if !connection.watchingOutput {
            connection.watchingOutput = true
            watch(connection.fd, Self.connectionEvents | EPOLLOUT.rawValue, modify: true)
        }
    }

    /// The socket takes more: send what waits, then serve the requests that waited for it.
    private func flush(_ connection: HTTPConnection) {
        while connection.hasOutput {
            let sent = connection.output.withUnsafeBytes {
                send(connection.fd, $0.baseAddress! + connection.written, $0.count - connection.written, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                connection.written += sent
                // A kept-alive connection's idle deadline runs from the last byte sent.
                server.connections.wrote(connection.id)
                continue
            }
            if sent < 0, errno == EINTR { continue }
            if sent < 0, errno == EAGAIN || errno == EWOULDBLOCK { return }
            connection.failed = true
            finish(connection)
            return
        }
        connection.output = []
        connection.written = 0
        connection.watchingOutput = false
        watch(connection.fd, Self.connectionEvents, modify: true)
        if case .closing = connection.phase { shutdown(connection.fd, Int32(SHUT_WR)) }
        resume(connection)
    }
}
