internal import CEventPoll
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Core

/// One I/O thread of `HTTPServer`: an edge-triggered epoll over its connections and the shared
/// listening socket. It accepts connections (handing each to the loops in turn), reads requests,
/// runs inline handlers, writes answers, and closes connections.
///
/// A connection's socket is closed only here, after its entry left the server's `ConnectionGuard`
/// (which only ever shuts sockets down, under its lock, while their entry is present), and never
/// while an offloaded request on it waits for its answer, whose thread may be sending on it.
///
/// `@unchecked Sendable` invariant: `connections` and the connections' loop-owned fields are
/// touched only on the loop's thread; other threads reach the loop only through `post`.
final class EventLoop: @unchecked Sendable {
    /// What other threads ask of the loop.
    enum Work {
        /// A connection accepted by another loop, entered in the `ConnectionGuard` under `id`.
        case adopt(fd: Int32, id: UInt, address: String)
        /// An offloaded request's answer, which its thread could not send whole; `counted` when
        /// that thread already told the `ConnectionGuard`.
        case answer(HTTPConnection, bytes: [UInt8], counted: Bool)
        case stopAccepting
        /// Close every connection and end the loop.
        case stop
    }

    /// Past this many unsent bytes, a connection's further requests wait until the client reads.
    static let outputBacklog = 1 << 20
    static let readSize = 65_536

    /// Strong: the loop's thread uses it until the loop ends, which only `HTTPServer.stop` asks.
    let server: HTTPServer
    private let listener: Int32
    private let poll: Int32
    private let wakeup = Wakeup()
    private let posted = Mutex<[Work]>([])
    private var connections: [Int32: HTTPConnection] = [:]
    private var scratch = [UInt8](repeating: 0, count: EventLoop.readSize)
    private var running = true

    init(server: HTTPServer, listener: Int32) {
        self.server = server
        self.listener = listener
        poll = epoll_create1(Int32(EPOLL_CLOEXEC))
        precondition(poll >= 0, "epoll_create1 failed: errno \(errno)")
        watch(listener, EPOLLIN.rawValue | EPOLLEXCLUSIVE.rawValue)
        watch(wakeup.fd, EPOLLIN.rawValue)
    }

    deinit { Glibc.close(poll) }

    /// Hands `work` to the loop's thread.
    func post(_ work: Work) {
        let first = posted.withLock { queue -> Bool in
            queue.append(work)
            return queue.count == 1
        }
        if first { wakeup.signal() }
    }

    func run() {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        while running {
            let count = events.withUnsafeMutableBufferPointer { epoll_wait(poll, $0.baseAddress, Int32($0.count), -1) }
            guard count >= 0 else { continue }
            for index in 0..<Int(count) {
                let event = events[index]
                if event.data.fd == listener {
                    acceptConnections()
                } else if event.data.fd == wakeup.fd {
                    wakeup.reset()
                    takePosted()
                } else if let connection = connections[event.data.fd] {
                    if event.events & EPOLLOUT.rawValue != 0 { flush(connection) }
                    if event.events & ~EPOLLOUT.rawValue != 0, !connection.closed { readable(connection) }
                }
            }
        }
        for connection in Array(connections.values) { close(connection, stopping: true) }
        // Connections handed over as the loop stopped.
        for case .adopt(let fd, let id, _) in posted.withLock({ $0 }) {
            server.connections.closed(id)
            Glibc.close(fd)
        }
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
            let text = Self.addressText(address)
            // Entered here, in the order connections came, which decides who is pushed out at the limit.
            guard let id = server.connections.opened(fd: fd, hardLimit: server.hardLimit) else {
                Glibc.close(fd)
                continue
            }
            let owner = server.loopForNextConnection()
            if owner === self { adopt(fd: fd, id: id, address: text) } else { owner.post(.adopt(fd: fd, id: id, address: text)) }
        }
    }

    private func adopt(fd: Int32, id: UInt, address: String) {
        let connection = HTTPConnection(fd: fd, id: id, address: address, loop: self)
        connections[fd] = connection
        watch(fd, Self.connectionEvents)
        // Bytes that came with the connection raise no new edge.
        readable(connection)
    }

    /// Closes the connection, unless an offloaded request on it still waits for its answer: then
    /// the loop closes it once the answer came (`stopping`: shuts it down and leaves it).
    private func close(_ connection: HTTPConnection, stopping: Bool = false) {
        guard !connection.closed else { return }
        if case .offloaded = connection.phase {
            let waiting = connection.exchange.withLock { exchange -> Bool in
                if exchange.waiting { exchange.deferred = true }
                return exchange.waiting
            }
            if waiting {
                connection.peerClosed = true
                if stopping { shutdown(connection.fd, Int32(SHUT_RDWR)) }
                return
            }
        }
        connection.closed = true
        server.connections.closed(connection.id)
        connections[connection.fd] = nil
        epoll_ctl(poll, EPOLL_CTL_DEL, connection.fd, nil)
        Glibc.close(connection.fd)
    }

    private func takePosted() {
        let works = posted.withLock { queue -> [Work] in
            defer { queue.removeAll(keepingCapacity: true) }
            return queue
        }
        for work in works {
            switch work {
            case .adopt(let fd, let id, let address):
                adopt(fd: fd, id: id, address: address)
            case .answer(let connection, let bytes, let counted):
                deliver(connection, bytes, counted: counted)
            case .stopAccepting:
                epoll_ctl(poll, EPOLL_CTL_DEL, listener, nil)
            case .stop:
                running = false
            }
        }
    }

    // MARK: Reading

    private func readable(_ connection: HTTPConnection) {
        var received = 0
        while true {
            let count = scratch.withUnsafeMutableBytes { read(connection.fd, $0.baseAddress, $0.count) }
            if count > 0 {
                scratch.withUnsafeBufferPointer { connection.input.append(contentsOf: UnsafeBufferPointer(rebasing: $0[0..<count])) }
                received += count
                // A short read emptied the socket; more bytes raise a new edge.
                if count < Self.readSize { break }
                continue
            }
            if count < 0, errno == EINTR { continue }
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { break }
            connection.peerClosed = true
            break
        }
        switch connection.phase {
        case .body, .chunked, .discard: if received > 0 { server.connections.received(connection.id, bytes: received) }
        default: break
        }
        if case .offloaded = connection.phase {
            let waiting = connection.exchange.withLock { exchange -> Bool in
                if exchange.waiting { exchange.deferred = true }
                return exchange.waiting
            }
            if waiting { return }
            // Answered meanwhile by the thread that handled it.
            connection.phase = .head
        }
        process(connection)
        finish(connection)
    }

    /// Closes the connection when it is done: the peer left, or the last answer closes it and is sent.
    private func finish(_ connection: HTTPConnection) {
        guard !connection.closed else { return }
        if case .offloaded = connection.phase, !connection.peerClosed { return }
        if connection.peerClosed || connection.closeWhenWritten && !connection.hasOutput { close(connection) }
    }

    // MARK: Requests

    /// Serves the complete requests in `input`, in order, until one is offloaded, the input runs
    /// out, or too much output waits.
    private func process(_ connection: HTTPConnection) {
        while !connection.closed, !connection.closeWhenWritten, connection.output.count - connection.written < Self.outputBacklog {
            let available = connection.input.count - connection.parsed
            switch connection.phase {
            case .offloaded:
                // Answered already (by an offload that answered at once, or a thread that sent the
                // answer itself): go on.
                guard connection.exchange.withLock({ $0.waiting }) else {
                    connection.phase = .head
                    continue
                }
                compact(connection)
                return
            case .head:
                // A head is parsed once a line has ended since the last look (or the request line ran
                // past its limit), so that a head trickling in a byte at a time is not parsed anew
                // for each byte.
                let from = max(connection.scanned, connection.parsed)
                connection.scanned = connection.input.count
                guard connection.input[from...].contains(0x0A) || available > RequestHead.requestLineLimit else { break }
                let parse = connection.input.withUnsafeBytes { RequestHead.parse(UnsafeRawBufferPointer(rebasing: $0[connection.parsed...])) }
                switch parse {
                case .incomplete:
                    break
                case .refused(let problem):
                    server.connections.busy(connection.id)
                    respond(connection, server.refusal(problem.status, "malformed request: \(problem.message)"), keepAlive: false, omitBody: false)
                    return
                case .complete(let head, let length):
                    connection.parsed += length
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
                let offset = connection.parsed
                var end = 0
                let step = connection.input.withUnsafeBytes { bytes in
                    var position = offset
                    defer { end = position }
                    return decoder.decode(bytes, offset: &position)
                }
                connection.parsed = end
                switch step {
                case .needMore:
                    connection.phase = .chunked(head, decoder)
                case .malformed(let message):
                    server.connections.busy(connection.id)
                    respond(connection, server.refusal(400, "malformed request: \(message)"), keepAlive: false, omitBody: false)
                    return
                case .done:
                    if decoder.tooLarge {
                        server.connections.busy(connection.id)
                        connection.phase = .head
                        respond(connection, tooLarge(decoder.limit), keepAlive: head.keepAlive, omitBody: false)
                    } else {
                        dispatch(connection, head, body: decoder.body)
                    }
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
            respond(connection, server.refusal(503, "too many connections; please retry"), keepAlive: false, omitBody: false)
            return
        }
        let limit = server.bodyLimit(head.method, head.path)
        if let length = head.contentLength, length > limit {
            server.connections.busy(connection.id)
            // A client that waits for 100 Continue sends no body: the connection cannot go on.
            let goesOn = head.keepAlive && !head.expectsContinue
            if goesOn { connection.phase = .discard(remaining: length) }
            respond(connection, tooLarge(limit), keepAlive: goesOn, omitBody: false)
            return
        }
        if head.expectsContinue, head.chunked || (head.contentLength ?? 0) > 0 {
            write(connection, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        if head.chunked {
            connection.phase = .chunked(head, ChunkedBody(limit: limit))
        } else if let length = head.contentLength, length > 0 {
            connection.phase = .body(head, length: length)
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
        let omitBody = head.method == "HEAD"
        guard server.classify(request) == .offload else {
            respond(connection, server.handler(request), keepAlive: head.keepAlive, omitBody: omitBody)
            return
        }
        // Count first, then look at `stopping`: `stop` sets the flag before it reads the count, so a
        // request either is counted (and waited for) or sees the flag.
        server.suspended.add(1, ordering: .sequentiallyConsistent)
        if server.stopping.load(ordering: .sequentiallyConsistent) {
            server.suspended.subtract(1, ordering: .sequentiallyConsistent)
            respond(connection, server.refusal(503, "shutting down, please retry"), keepAlive: head.keepAlive, omitBody: omitBody)
            return
        }
        connection.phase = .offloaded
        // Bytes already queued either way (output, or a pipelined request) go first through the loop.
        let direct = !connection.hasOutput && connection.parsed == connection.input.count
        connection.exchange.withLock { exchange in
            exchange = HTTPConnection.Exchange(waiting: true, direct: direct, deferred: false, keepAlive: head.keepAlive, omitBody: omitBody)
        }
        let server = server
        server.offload(request) { [connection] response in
            connection.loop.answer(connection, response)
            server.suspended.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    /// Answers on the loop's thread.
    private func respond(_ connection: HTTPConnection, _ response: HTTPResponse, keepAlive: Bool, omitBody: Bool) {
        server.connections.answered(connection.id)
        write(connection, response.wire(omitBody: omitBody, close: !keepAlive))
        if !keepAlive { connection.closeWhenWritten = true }
    }

    /// An offloaded request's answer, on the thread that produced it. That thread sends it itself
    /// when nothing else is queued on the connection and it stays open; otherwise the loop does.
    func answer(_ connection: HTTPConnection, _ response: HTTPResponse) {
        let (keepAlive, omitBody) = connection.exchange.withLock { ($0.keepAlive, $0.omitBody) }
        let bytes = response.wire(omitBody: omitBody, close: !keepAlive)
        var rest: [UInt8]?
        var counted = false
        connection.exchange.withLock { exchange in
            exchange.waiting = false
            guard exchange.direct, !exchange.deferred, keepAlive else {
                rest = bytes
                return
            }
            // Before the bytes go out: the client's next request may arrive right after them.
            server.connections.answered(connection.id)
            counted = true
            let sent = bytes.withUnsafeBytes { send(connection.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if sent < bytes.count { rest = sent > 0 ? Array(bytes[sent...]) : bytes }
        }
        if let rest { post(.answer(connection, bytes: rest, counted: counted)) }
    }

    /// An answer its thread handed back: send it, then go on with what the client sent meanwhile.
    private func deliver(_ connection: HTTPConnection, _ bytes: [UInt8], counted: Bool) {
        guard !connection.closed else { return }
        let keepAlive = connection.exchange.withLock { $0.keepAlive }
        connection.phase = .head
        if !counted { server.connections.answered(connection.id) }
        write(connection, bytes)
        if !keepAlive { connection.closeWhenWritten = true }
        process(connection)
        finish(connection)
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
            connection.peerClosed = true
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
                continue
            }
            if sent < 0, errno == EINTR { continue }
            if sent < 0, errno == EAGAIN || errno == EWOULDBLOCK { return }
            connection.peerClosed = true
            finish(connection)
            return
        }
        connection.output = []
        connection.written = 0
        connection.watchingOutput = false
        watch(connection.fd, Self.connectionEvents, modify: true)
        process(connection)
        finish(connection)
    }

    /// The peer's IP address as text.
    private static func addressText(_ address: sockaddr_storage) -> String {
        var address = address
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: Int(INET6_ADDRSTRLEN)) { buffer in
            let family = Int32(address.ss_family)
            let written: UnsafePointer<CChar>? = withUnsafePointer(to: &address) { pointer in
                let raw = UnsafeRawPointer(pointer)
                if family == AF_INET {
                    return inet_ntop(AF_INET, raw + MemoryLayout<sockaddr_in>.offset(of: \sockaddr_in.sin_addr)!, buffer.baseAddress, socklen_t(buffer.count))
                }
                if family == AF_INET6 {
                    return inet_ntop(AF_INET6, raw + MemoryLayout<sockaddr_in6>.offset(of: \sockaddr_in6.sin6_addr)!, buffer.baseAddress, socklen_t(buffer.count))
                }
                return nil
            }
            guard written != nil else { return "" }
            return String(cString: buffer.baseAddress!)
        }
    }
}
