internal import CNGHTTP2
import Core
internal import COpenSSL
import Foundation
import SDKClient
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One event-loop thread of an `HTTP2Server`: its own listening sockets (SO_REUSEPORT spreads new
/// connections over the loops), its connections, and the answers it holds back for the server's
/// response delay. A connection accepted while another loop serves fewer is handed to that loop
/// (`adopt`), so that the loops serve connections in turn rather than as the kernel's hash of
/// their addresses falls: two connections always get two loops.
///
/// `@unchecked Sendable`: created on the starting thread, then used only by its own loop thread;
/// `server` reads only thread-safe members of it, and other loops only `served` and `adopt`.
final class ServerLoop: @unchecked Sendable {
    /// What every loop of a server shares.
    struct Settings: Sendable {
        var tls: TLSServerContext
        var delayNanoseconds: Int64
        var maxConcurrentStreams: UInt32
        var maxConcurrentStreamsUntilFirstAnswer: UInt32?
    }

    /// How long a finished connection waits for the client to close before the server closes it.
    static let drainNanoseconds: Int64 = 1_000_000_000

    let poll = EventPoll(capacity: 512)
    let handler: any HTTP2Handler
    let maxConcurrentStreams: UInt32
    let maxConcurrentStreamsUntilFirstAnswer: UInt32?
    let counters: HTTP2ServerCounters
    let callbacks: OpaquePointer
    /// Decrypted bytes land here before the session reads them.
    let readBuffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 1 << 16)
    private let tls: TLSServerContext
    private let listeners: [Int32]
    private let delayNanoseconds: Int64
    private unowned let server: HTTP2Server
    private var connections: [UInt64: HTTP2Connection] = [:]
    private var nextTag: UInt64
    let index: Int
    /// Connections this loop serves or has been handed and not yet taken up.
    let served = Atomic<Int>(0)
    /// Connections other loops accepted for this one: (socket, listener index).
    private let handedOver = Lock<[(fd: Int32, listener: Int)]>([])
    /// Signalled by `adopt`; the loop's poll watches it under the tag `listeners.count`.
    private let wake = Wakeup()
    /// Answers held back for the response delay, in the order they fall due (the delay is the same for all).
    private var held: [(due: Int64, tag: UInt64, stream: Int32, response: HTTP2Response)] = []
    private var heldStart = 0
    /// Finished connections waiting for the client to close, in the order their drain time ends.
    private var draining: [(due: Int64, tag: UInt64)] = []

    init(server: HTTP2Server, listeners: [Int32], settings: Settings, handler: any HTTP2Handler, index: Int) {
        self.server = server
        self.listeners = listeners
        tls = settings.tls
        self.handler = handler
        delayNanoseconds = settings.delayNanoseconds
        maxConcurrentStreams = settings.maxConcurrentStreams
        maxConcurrentStreamsUntilFirstAnswer = settings.maxConcurrentStreamsUntilFirstAnswer
        counters = server.counters
        nextTag = UInt64(index) << 48 | 1 << 32
        self.index = index
        var made: OpaquePointer?
        precondition(nghttp2_session_callbacks_new(&made) == 0, "nghttp2_session_callbacks_new failed")
        callbacks = made!
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, onBeginHeaders)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onDataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, onFrame)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onStreamClose)
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, onFrameSent)
        for (index, listener) in listeners.enumerated() { poll.add(listener, tag: UInt64(index), interest: .readable) }
        poll.add(wake.fd, tag: UInt64(listeners.count), interest: .readable)
    }

    deinit {
        nghttp2_session_callbacks_del(callbacks)
        readBuffer.deallocate()
        for (fd, _) in handedOver.withLock({ $0 }) { close(fd) }
    }

    /// Hands this loop a connection another loop accepted (from that loop's thread).
    func adopt(_ fd: Int32, listener: Int) {
        handedOver.withLock { $0.append((fd, listener)) }
        wake.signal()
    }

    /// Serves until the server stops, then closes every connection and listening socket.
    func run() {
        while !server.stopping.load(ordering: .relaxed) {
            var timeout: Int64 = 100_000_000
            if heldStart < held.count { timeout = min(timeout, held[heldStart].due - Self.now()) }
            if let first = draining.first { timeout = min(timeout, first.due - Self.now()) }
            poll.wait(timeoutNanoseconds: max(0, timeout)) { event in
                if event.tag < UInt64(listeners.count) {
                    accept(listener: Int(event.tag))
                } else if event.tag == UInt64(listeners.count) {
                    takeHandedOver()
                } else if let connection = connections[event.tag] {
                    if event.readable { connection.readable() }
                    if event.writable && !connection.closed { connection.writable() }
                }
            }
            releaseDue()
            closeDrained()
        }
        for connection in Array(connections.values) { connection.close() }
        for listener in listeners { close(listener) }
    }

    /// Serves the connections other loops handed over.
    private func takeHandedOver() {
        wake.reset()
        let taken = handedOver.withLock { pending in
            defer { pending.removeAll() }
            return pending
        }
        for (fd, listener) in taken { serve(fd, listener: listener) }
    }

    /// Accepts what waits on `listener`; each connection goes to the loop that serves the fewest
    /// (this one when it is among them).
    private func accept(listener: Int) {
        while true {
            let fd = Glibc.accept(listeners[listener], nil, nil)
            guard fd >= 0 else { return }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let loops = server.runningLoops
            let fewest = loops.min { $0.served.load(ordering: .relaxed) < $1.served.load(ordering: .relaxed) }
            if let fewest, fewest !== self, fewest.served.load(ordering: .relaxed) < served.load(ordering: .relaxed) {
                fewest.served.add(1, ordering: .relaxed)
                fewest.adopt(fd, listener: listener)
            } else {
                served.add(1, ordering: .relaxed)
                serve(fd, listener: listener)
            }
        }
    }

    /// Serves the accepted socket `fd` (counted in `served` already).
    private func serve(_ fd: Int32, listener: Int) {
        guard let ssl = SSL_new(tls.context) else {
            served.subtract(1, ordering: .relaxed)
            close(fd)
            return
        }
        SSL_set_fd(ssl, fd)
        SSL_set_accept_state(ssl)
        let tag = nextTag
        nextTag += 1
        let context = HTTP2ConnectionContext(id: tag, listener: listener, loop: index)
        let connection = HTTP2Connection(fd: fd, tag: tag, ssl: ssl, context: context, loop: self)
        connections[tag] = connection
        server.connectionOpened()
        poll.add(fd, tag: tag, interest: .readable)
    }

    /// Sends `response` on `stream` now, or holds it for the response delay.
    func answer(_ connection: HTTP2Connection, stream: Int32, response: HTTP2Response) {
        if delayNanoseconds <= 0 {
            connection.submit(stream: stream, response: response)
        } else {
            held.append((Self.now() + delayNanoseconds, connection.tag, stream, response))
        }
    }

    /// Sends the held answers that fell due (to connections still open).
    private func releaseDue() {
        guard heldStart < held.count else { return }
        let now = Self.now()
        var touched: [UInt64: HTTP2Connection] = [:]
        while heldStart < held.count, held[heldStart].due <= now {
            let entry = held[heldStart]
            heldStart += 1
            if let connection = connections[entry.tag] {
                connection.submit(stream: entry.stream, response: entry.response)
                touched[entry.tag] = connection
            }
        }
        if heldStart == held.count {
            held.removeAll(keepingCapacity: true)
            heldStart = 0
        } else if heldStart > 4096 {
            held.removeFirst(heldStart)
            heldStart = 0
        }
        for connection in touched.values { connection.flush() }
    }

    /// `connection` finished its session and waits for the client to close, at most the drain time.
    func drain(_ connection: HTTP2Connection) {
        draining.append((Self.now() + Self.drainNanoseconds, connection.tag))
    }

    private func closeDrained() {
        guard let first = draining.first, first.due <= Self.now() else { return }
        let now = Self.now()
        let due = draining.prefix { $0.due <= now }
        draining.removeFirst(due.count)
        for entry in due { connections[entry.tag]?.close() }
    }

    func remove(_ connection: HTTP2Connection) {
        poll.remove(connection.fd)
        if connections.removeValue(forKey: connection.tag) != nil {
            served.subtract(1, ordering: .relaxed)
            server.connectionClosed()
        }
    }

    static func now() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}

// MARK: nghttp2 callbacks (free functions: C calls them on the loop thread)

private func connection(_ user: UnsafeMutableRawPointer?) -> HTTP2Connection {
    Unmanaged<HTTP2Connection>.fromOpaque(user!).takeUnretainedValue()
}

private func onBeginHeaders(_ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ user: UnsafeMutableRawPointer?) -> Int32 {
    guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
        frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
    else { return 0 }
    connection(user).beginRequest(stream: frame.pointee.hd.stream_id)
    return 0
}

private func onHeader(_ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ name: UnsafePointer<UInt8>?, _ nameLength: Int,
                      _ value: UnsafePointer<UInt8>?, _ valueLength: Int, _ flags: UInt8, _ user: UnsafeMutableRawPointer?) -> Int32 {
    guard let frame, let name, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
    connection(user).header(stream: frame.pointee.hd.stream_id, name: UnsafeBufferPointer(start: name, count: nameLength),
                            value: UnsafeBufferPointer(start: value, count: valueLength),
                            neverIndexed: flags & UInt8(NGHTTP2_NV_FLAG_NO_INDEX.rawValue) != 0)
    return 0
}

private func onDataChunk(_ session: OpaquePointer?, _ flags: UInt8, _ stream: Int32, _ data: UnsafePointer<UInt8>?, _ length: Int,
                         _ user: UnsafeMutableRawPointer?) -> Int32 {
    connection(user).data(stream: stream, UnsafeBufferPointer(start: data, count: length))
    return 0
}

private func onFrame(_ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ user: UnsafeMutableRawPointer?) -> Int32 {
    guard let frame else { return 0 }
    let type = frame.pointee.hd.type
    if type == UInt8(NGHTTP2_PING.rawValue) {
        if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0 { connection(user).loop.counters.pingReceived() }
        return 0
    }
    guard type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue),
        frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
    else { return 0 }
    connection(user).requestEnded(stream: frame.pointee.hd.stream_id)
    return 0
}

private func onStreamClose(_ session: OpaquePointer?, _ stream: Int32, _ errorCode: UInt32, _ user: UnsafeMutableRawPointer?) -> Int32 {
    connection(user).streamClosed(stream: stream)
    return 0
}

private func onFrameSent(_ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ user: UnsafeMutableRawPointer?) -> Int32 {
    guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_RST_STREAM.rawValue),
        frame.pointee.rst_stream.error_code == NGHTTP2_REFUSED_STREAM.rawValue
    else { return 0 }
    connection(user).loop.counters.streamRefused()
    return 0
}
