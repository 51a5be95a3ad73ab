internal import CNGHTTP2
internal import COpenSSL
import Core
import SDKClient
#if canImport(Glibc)
import Glibc
#endif

/// One TLS connection to an origin speaking HTTP/2 through an nghttp2 client session: connects
/// without blocking, checks the certificate and ALPN `h2`, waits for the server's SETTINGS, then
/// carries up to the server's announced number of streams. Owned and used by one `ClientLoop`
/// thread; the socket, `SSL` and session are freed exactly once, in `close`.
///
/// With `HTTP2ClientSettings.offersHTTP1`, a server that selects `http/1.1` in ALPN, or nothing,
/// is spoken HTTP/1.1 to instead: the connection is kept alive and carries one request at a time
/// (`Content-Length` bodies out; `Content-Length`, chunked or closing bodies in, read by
/// `HTTPResponseParser`), and closes after a response that says `Connection: close`.
///
/// What happens to a request depends on how far it got: one the server refused unprocessed
/// (REFUSED_STREAM, or above a GOAWAY's last stream id) or that never left goes back to the loop's
/// queue; one whose last frame (over HTTP/1.1: last byte) went out and whose answer never came
/// fails as possibly delivered.
final class ClientConnection {
    enum State: Equatable {
        case connecting
        case handshaking
        /// The session is up; the server's first SETTINGS has not arrived (APNs announces its stream
        /// limit there, so nothing is sent before it).
        case awaitingSettings
        case ready
        /// GOAWAY received: no new streams; closes when the last one ends.
        case draining
        case closed
    }

    /// A stream in progress and what has come back on it.
    struct Exchange {
        let transfer: Transfer
        var bodySent = 0
        /// The request's last frame (END_STREAM) went out: the server may act on it.
        var requestSent = false
        var status = 0
        var headers = HTTP2Headers()
        var body: [UInt8] = []
        /// The response's last frame (END_STREAM) arrived.
        var complete = false
    }

    let fd: Int32
    let tag: UInt64
    let origin: Origin
    /// Opened while the origin was failing, to find out whether it is back: carries one stream
    /// until an answer comes.
    let isProbe: Bool
    unowned let loop: ClientLoop
    private(set) var state = State.connecting
    private let ssl: OpaquePointer
    private var session: OpaquePointer?
    private(set) var streams: [Int32: Exchange] = [:]
    /// The `:path` of the last request submitted: a path that repeats it is indexed by HPACK (FCM
    /// sends every push to one path), one that does not is never indexed (an APNs path names its
    /// device), so that unique values never push the shared headers out of the dynamic table.
    private var lastPath = ""
    let openedAt: Double
    private var lastReceived: Double
    private var pingSentAt: Double?
    private var goawayLastStream = Int32.max
    private var outgoing: [UInt8] = []
    private var outgoingSent = 0
    /// A new socket is registered for writability (the connect completing).
    private var waitingToWrite = true
    /// ALPN chose HTTP/1.1 (or nothing): `streams` holds at most the one request under
    /// `http1Stream`, and `inbound` the bytes of its response so far.
    private(set) var speaksHTTP1 = false
    private var inbound: [UInt8] = []
    private var parser = HTTPResponseParser()
    static let http1Stream: Int32 = 1

    /// Opens a non-blocking socket to `address` and starts connecting; throws the reason when the
    /// socket cannot be made or the connection is refused at once.
    init(origin: Origin, address: ResolvedAddress, tag: UInt64, isProbe: Bool, session: OpaquePointer?, loop: ClientLoop, now: Double)
        throws(HTTP2TransportError) {
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw HTTP2TransportError("cannot open a socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        guard let ssl = loop.tls.client(fd: fd, host: origin.host, session: session) else {
            Glibc.close(fd)
            throw HTTP2TransportError("cannot start TLS: \(TLSClientContext.lastError())")
        }
        let result = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        guard result == 0 || errno == EINPROGRESS else {
            let reason = String(cString: strerror(errno))
            SSL_free(ssl)
            Glibc.close(fd)
            throw HTTP2TransportError("cannot connect to \(origin.authority): \(reason)")
        }
        self.fd = fd
        self.tag = tag
        self.origin = origin
        self.isProbe = isProbe
        self.ssl = ssl
        self.loop = loop
        openedAt = now
        lastReceived = now
        SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Streams this connection may open now: what the server announces, less those open (one for
    /// a probe until the origin answers).
    func room(probing: Bool) -> Int {
        guard state == .ready else { return 0 }
        if speaksHTTP1 { return streams.isEmpty ? 1 : 0 }
        guard let session else { return 0 }
        let limit = isProbe && probing ? 1 : Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
        return max(0, limit - streams.count)
    }

    // MARK: Events

    /// The socket is readable (or failed).
    func readable(now: Double) {
        switch state {
        case .connecting: return connected()
        case .handshaking: return handshake()
        case .closed: return
        default: break
        }
        let buffer = loop.readBuffer
        while state != .closed {
            let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
            if count > 0 {
                lastReceived = now
                if speaksHTTP1 {
                    receivedHTTP1(UnsafeBufferPointer(start: buffer.baseAddress, count: Int(count)), atEOF: false, now: now)
                    continue
                }
                let consumed = nghttp2_session_mem_recv(session, buffer.baseAddress, Int(count))
                if consumed < 0 {
                    return close(failure: "HTTP/2 error: \(String(cString: nghttp2_strerror(Int32(consumed))))")
                }
                continue
            }
            let error = SSL_get_error(ssl, count)
            if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { break }
            let reason = error == SSL_ERROR_ZERO_RETURN || (error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)
                ? "the server closed the connection" : "TLS error: \(TLSClientContext.lastError())"
            ERR_clear_error()
            // A response whose body ends with the connection is complete now.
            if speaksHTTP1 { receivedHTTP1(nil, atEOF: true, now: now) }
            return close(failure: streams.isEmpty && state != .awaitingSettings ? nil : reason)
        }
        flush()
        closeIfDone()
    }

    /// The socket is writable again.
    func writable() {
        switch state {
        case .connecting: connected()
        case .handshaking: handshake()
        case .closed: return
        default: flush()
        }
    }

    private func connected() {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
        guard error == 0 else { return close(failure: "cannot connect to \(origin.authority): \(String(cString: strerror(error)))") }
        state = .handshaking
        handshake()
    }

    private func handshake() {
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            var name: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &name, &length)
            let selected = name.map { Array(UnsafeBufferPointer(start: $0, count: Int(length))) } ?? []
            setWaitingToWrite(false)
            if selected.elementsEqual("h2".utf8) { return startSession() }
            guard loop.settings.offersHTTP1 else { return close(failure: "\(origin.authority) does not speak HTTP/2 (ALPN h2)") }
            guard selected.isEmpty || selected.elementsEqual("http/1.1".utf8) else {
                return close(failure: "\(origin.authority) selected ALPN \(String(decoding: selected, as: UTF8.self)), neither h2 nor http/1.1")
            }
            speaksHTTP1 = true
            state = .ready
            loop.connectionOpened(self)
            return
        }
        let error = SSL_get_error(ssl, result)
        if error == SSL_ERROR_WANT_READ {
            setWaitingToWrite(false)
        } else if error == SSL_ERROR_WANT_WRITE {
            setWaitingToWrite(true)
        } else {
            let verify = SSL_get_verify_result(ssl)
            let reason = verify != X509_V_OK ? String(cString: X509_verify_cert_error_string(verify)) : TLSClientContext.lastError()
            ERR_clear_error()
            close(failure: "TLS handshake with \(origin.authority) failed: \(reason)")
        }
    }

    private func startSession() {
        var created: OpaquePointer?
        guard nghttp2_session_client_new(&created, loop.callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0, let created else {
            return close(failure: "cannot start an HTTP/2 session")
        }
        session = created
        state = .awaitingSettings
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        _ = nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        _ = nghttp2_session_set_local_window_size(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
        loop.connectionOpened(self)
        flush()
    }

    // MARK: Requests

    /// Opens a stream for `transfer`; false when the session refuses it (the transfer is untouched).
    func submit(_ transfer: Transfer, now: Double) -> Bool {
        guard state == .ready else { return false }
        if speaksHTTP1 { return submitHTTP1(transfer, now: now) }
        guard let session else { return false }
        let request = transfer.request
        var blob: [UInt8] = []
        blob.reserveCapacity(64 + transfer.origin.authority.utf8.count + transfer.path.utf8.count
                             + request.headers.reduce(0) { $0 + $1.utf8.count })
        var spans: [(name: Int, nameLength: Int, value: Int, valueLength: Int, indexed: Bool)] = []
        spans.reserveCapacity(4 + request.headers.count)
        func add<Name: Collection<UInt8>, Value: Collection<UInt8>>(_ name: Name, _ value: Value, indexed: Bool = true) {
            let nameStart = blob.count
            blob.append(contentsOf: name)
            let valueStart = blob.count
            blob.append(contentsOf: value)
            spans.append((nameStart, valueStart - nameStart, valueStart, blob.count - valueStart, indexed))
        }
        add(":method".utf8, "POST".utf8)
        add(":scheme".utf8, "https".utf8)
        add(":authority".utf8, transfer.origin.authority.utf8)
        add(":path".utf8, transfer.path.utf8, indexed: transfer.path == lastPath)
        lastPath = transfer.path
        // A request's own lines (an `apns-id`) differ from one request to the next.
        // Their names are lower-cased where they land in the block.
        for line in request.headers {
            let bytes = Array(line.utf8)
            guard let (name, value) = bytes.withUnsafeBufferPointer(HTTP2HeaderList.parts) else { continue }
            let nameStart = blob.count
            add(bytes[name], bytes[value], indexed: false)
            for index in nameStart..<nameStart + name.count { blob[index] = HTTP2HeaderList.lowercased(blob[index]) }
        }
        let shared = request.sharedHeaders?.fields ?? []
        let stream: Int32 = blob.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            var fields: [nghttp2_nv] = []
            fields.reserveCapacity(spans.count + shared.count)
            for span in spans {
                fields.append(nghttp2_nv(name: base + span.name, value: base + span.value, namelen: span.nameLength, valuelen: span.valueLength,
                                         flags: UInt8((span.indexed ? NGHTTP2_NV_FLAG_NONE : NGHTTP2_NV_FLAG_NO_INDEX).rawValue)))
            }
            fields.append(contentsOf: shared)
            if request.body.isEmpty { return nghttp2_submit_request(session, nil, fields, fields.count, nil, nil) }
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: readRequestBody)
            return nghttp2_submit_request(session, nil, fields, fields.count, &provider, nil)
        }
        guard stream > 0 else { return false }
        transfer.started = now
        streams[stream] = Exchange(transfer: transfer)
        return true
    }

    /// Writes `transfer` as an HTTP/1.1 request (names lower-cased as over HTTP/2; a line whose
    /// value holds CR or LF is left out, so no header can split the request); false while another
    /// request is in flight.
    private func submitHTTP1(_ transfer: Transfer, now: Double) -> Bool {
        guard streams.isEmpty else { return false }
        let request = transfer.request
        var head = Array("POST \(transfer.path) HTTP/1.1\r\nhost: \(transfer.origin.authority)\r\n".utf8)
        for line in request.headers + (request.sharedHeaders?.lines ?? []) {
            guard let (name, value) = HTTP2HeaderList.split(line), !name.contains(13), !name.contains(10), !value.contains(13),
                  !value.contains(10), name != Array("content-length".utf8), name != Array("host".utf8) else { continue }
            head += name + Array(": ".utf8) + value + [13, 10]
        }
        head += Array("content-length: \(request.body.count)\r\n\r\n".utf8)
        outgoing += head
        outgoing += request.body
        transfer.started = now
        streams[Self.http1Stream] = Exchange(transfer: transfer)
        return true
    }

    /// Takes the bytes of the response in flight (nil: none, only the end of the connection) and
    /// hands over each complete response. Bytes that arrive with no request in flight, or a response
    /// that is not HTTP/1.1, close the connection as broken; at the end of the connection an
    /// unfinished response is left to `close`, which fails its request.
    private func receivedHTTP1(_ bytes: UnsafeBufferPointer<UInt8>?, atEOF: Bool, now: Double) {
        if let bytes { inbound.append(contentsOf: bytes) }
        while state != .closed, let exchange = streams[Self.http1Stream] {
            let count = inbound.count
            let outcome = inbound.withUnsafeMutableBytes { parser.parse($0, count: count, atEOF: atEOF) }
            switch outcome {
            case .needMore:
                return
            case .malformed(let problem):
                if atEOF { return }
                return close(failure: "\(origin.authority) sent a malformed HTTP/1.1 response: \(problem)")
            case .complete(let status, let body, let consumed, let keepAlive):
                let headers = inbound.withUnsafeMutableBytes { parser.headers(in: $0) }
                let content = Array(inbound[body])
                inbound.removeFirst(consumed)
                parser.reset()
                // An interim response (100 Continue) precedes the real one.
                if (100..<200).contains(status) { continue }
                streams[Self.http1Stream] = nil
                loop.finished(exchange.transfer, HTTP2Response(status: status, headers: HTTP2Headers(headers), body: content, transportError: nil),
                              answered: true, now: now)
                if !keepAlive || atEOF { return close(failure: nil) }
            }
        }
        if state != .closed, !inbound.isEmpty {
            close(failure: "\(origin.authority) sent bytes with no request in flight")
        }
    }

    /// Copies up to `length` bytes of `stream`'s request body into `buffer`; sets EOF at the end.
    func readBody(stream: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let index = streams.index(forKey: stream) else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let sent = streams.values[index].bodySent
        let count = streams.values[index].transfer.request.body.withUnsafeBufferPointer { source in
            let count = min(length, source.count - sent)
            buffer.update(from: source.baseAddress! + sent, count: count)
            if sent + count == source.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
            return count
        }
        streams.values[index].bodySent += count
        return count
    }

    // MARK: Session callbacks
    //
    // Each looks its stream up once and changes the exchange in place.

    func sent(stream: Int32, endsStream: Bool) {
        if endsStream, let index = streams.index(forKey: stream) { streams.values[index].requestSent = true }
    }

    /// A request's HEADERS could not be sent (the session is going away): it goes back to the queue.
    func notSent(stream: Int32) {
        guard let exchange = streams.removeValue(forKey: stream) else { return }
        loop.requeue(exchange.transfer, refused: false)
    }

    func header(stream: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let index = streams.index(forKey: stream) else { return }
        if name.count == 7, name.elementsEqual(":status".utf8) {
            streams.values[index].status = Int(String(decoding: value, as: UTF8.self)) ?? 0
        } else {
            streams.values[index].headers.append(name: name, value: value)
        }
    }

    func data(stream: Int32, _ bytes: UnsafeBufferPointer<UInt8>) {
        if let index = streams.index(forKey: stream) { streams.values[index].body.append(contentsOf: bytes) }
    }

    func responseEnded(stream: Int32) {
        if let index = streams.index(forKey: stream) { streams.values[index].complete = true }
    }

    func settingsReceived(now: Double) {
        guard state == .awaitingSettings else { return }
        state = .ready
    }

    func pingAnswered() { pingSentAt = nil }

    /// Opens no more streams; closes once the last one has ended.
    func retire() {
        guard state == .ready else { return }
        state = .draining
        closeIfDone()
    }

    func goaway(lastStream: Int32) {
        goawayLastStream = min(goawayLastStream, lastStream)
        if state != .closed { state = .draining }
    }

    /// `stream` is over: answered, refused unprocessed, or reset.
    func streamClosed(stream: Int32, errorCode: UInt32, now: Double) {
        guard let exchange = streams.removeValue(forKey: stream) else { return }
        let transfer = exchange.transfer
        if exchange.complete, exchange.status > 0 {
            loop.finished(transfer, HTTP2Response(status: exchange.status, headers: exchange.headers, body: exchange.body, transportError: nil),
                          answered: true, now: now)
        } else if errorCode == NGHTTP2_REFUSED_STREAM.rawValue || stream > goawayLastStream || !exchange.requestSent {
            loop.requeue(transfer, refused: true)
        } else {
            let reason = String(cString: nghttp2_http2_strerror(errorCode))
            loop.finished(transfer, .failure("stream reset by \(origin.authority) (\(reason))", requestSent: true), answered: false, now: now)
        }
    }

    // MARK: Time

    /// Ends streams past their deadline, sends a PING after `pingInterval` of silence, and fails the
    /// connection when a PING goes unanswered for `pingTimeout` or it is not up after the connect
    /// timeout.
    func tick(now: Double) {
        let settings = loop.settings
        switch state {
        case .connecting, .handshaking, .awaitingSettings:
            if now - openedAt > settings.connectTimeoutSeconds { close(failure: "no connection to \(origin.authority) within the connect timeout") }
            return
        case .closed:
            return
        case .ready, .draining:
            break
        }
        if let sentAt = pingSentAt, now - sentAt > settings.pingTimeoutSeconds {
            return close(failure: "\(origin.authority) did not answer a PING within \(settings.pingTimeoutSeconds) s")
        }
        if pingSentAt == nil, now - lastReceived > settings.pingIntervalSeconds, let session {
            pingSentAt = now
            _ = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
        }
        for (stream, exchange) in streams where now > exchange.transfer.deadline {
            streams[stream] = nil
            if let session { _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, NGHTTP2_CANCEL.rawValue) }
            loop.finished(exchange.transfer, .failure("no answer within the request timeout", requestSent: exchange.requestSent),
                          answered: false, now: now)
            // Over HTTP/1.1 only closing the connection abandons a request.
            if speaksHTTP1 { return close(failure: nil) }
        }
        flush()
        closeIfDone()
    }

    // MARK: Writing and closing

    /// Moves what the session has to send into `outgoing` and writes as much as the socket takes.
    func flush() {
        guard state != .closed, session != nil || speaksHTTP1 else { return }
        while let session, outgoing.count - outgoingSent < 1 << 20 {
            var pointer: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &pointer)
            if count < 0 { return close(failure: "HTTP/2 error: \(String(cString: nghttp2_strerror(Int32(count))))") }
            if count == 0 { break }
            outgoing.append(contentsOf: UnsafeBufferPointer(start: pointer, count: count))
        }
        while outgoingSent < outgoing.count {
            let count = outgoing.withUnsafeBufferPointer { buffer in
                SSL_write(ssl, buffer.baseAddress! + outgoingSent, Int32(min(buffer.count - outgoingSent, Int(Int32.max))))
            }
            if count > 0 {
                outgoingSent += Int(count)
                continue
            }
            let error = SSL_get_error(ssl, count)
            if error == SSL_ERROR_WANT_WRITE || error == SSL_ERROR_WANT_READ { return setWaitingToWrite(true) }
            ERR_clear_error()
            return close(failure: "cannot write to \(origin.authority)")
        }
        outgoing.removeAll(keepingCapacity: outgoing.capacity <= 1 << 20)
        outgoingSent = 0
        setWaitingToWrite(false)
        // Over HTTP/1.1 the request is out once its last byte is written.
        if speaksHTTP1 { streams[Self.http1Stream]?.requestSent = true }
        if let session, nghttp2_session_want_write(session) != 0 { flush() }
    }

    /// A draining connection closes once its last stream has ended and everything is written.
    private func closeIfDone() {
        guard state == .draining, streams.isEmpty, outgoing.isEmpty else { return }
        close(failure: nil)
    }

    private func setWaitingToWrite(_ waiting: Bool) {
        guard waiting != waitingToWrite, state != .closed else { return }
        waitingToWrite = waiting
        loop.watch(self, writable: waiting)
    }

    /// Closes the connection (once). With a `failure`, what was on the network fails as possibly
    /// delivered and the origin is marked broken; what never left goes back to the queue either way.
    func close(failure: String?) {
        guard state != .closed else { return }
        let wasUp = state == .ready || state == .draining
        state = .closed
        let left = streams.values
        streams.removeAll()
        if let session { nghttp2_session_del(session) }
        session = nil
        // Freed without this, OpenSSL takes the connection's TLS session for a bad one and makes it
        // unresumable, though the origin keeps it for the next connection.
        if wasUp { SSL_set_shutdown(ssl, SSL_SENT_SHUTDOWN | SSL_RECEIVED_SHUTDOWN) }
        SSL_free(ssl)
        loop.closed(self, failure: failure)
        Glibc.close(fd)
        let now = monotonicSeconds()
        for exchange in left {
            if exchange.requestSent, let failure {
                loop.finished(exchange.transfer, .failure(failure, requestSent: true), answered: false, now: now)
            } else {
                loop.requeue(exchange.transfer, refused: false)
            }
        }
    }
}

// MARK: - nghttp2 callbacks (free functions: C calls them on the loop thread)

private func connection(_ user: UnsafeMutableRawPointer?) -> ClientConnection {
    Unmanaged<ClientConnection>.fromOpaque(user!).takeUnretainedValue()
}

private func readRequestBody(_ session: OpaquePointer?, _ stream: Int32, _ buffer: UnsafeMutablePointer<UInt8>?, _ length: Int,
                             _ flags: UnsafeMutablePointer<UInt32>?, _ source: UnsafeMutablePointer<nghttp2_data_source>?,
                             _ user: UnsafeMutableRawPointer?) -> Int {
    guard let user, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    return connection(user).readBody(stream: stream, into: buffer, length: length, flags: flags)
}

func clientOnHeader(_ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ name: UnsafePointer<UInt8>?, _ nameLength: Int,
                    _ value: UnsafePointer<UInt8>?, _ valueLength: Int, _ flags: UInt8, _ user: UnsafeMutableRawPointer?) -> Int32 {
    guard let frame, let name, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue) else { return 0 }
    connection(user).header(stream: frame.pointee.hd.stream_id, name: UnsafeBufferPointer(start: name, count: nameLength),
                            value: UnsafeBufferPointer(start: value, count: valueLength))
    return 0
}

func clientOnDataChunk(_ session: OpaquePointer?, _ flags: UInt8, _ stream: Int32, _ data: UnsafePointer<UInt8>?, _ length: Int,
                       _ user: UnsafeMutableRawPointer?) -> Int32 {
    connection(user).data(stream: stream, UnsafeBufferPointer(start: data, count: length))
    return 0
}

func clientOnFrameReceived(_ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ user: UnsafeMutableRawPointer?) -> Int32 {
    guard let frame else { return 0 }
    let header = frame.pointee.hd
    let owner = connection(user)
    switch UInt32(header.type) {
    case NGHTTP2_SETTINGS.rawValue where header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
        owner.settingsReceived(now: monotonicSeconds())
    case NGHTTP2_PING.rawValue where header.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0:
        owner.pingAnswered()
    case NGHTTP2_GOAWAY.rawValue:
        owner.goaway(lastStream: frame.pointee.goaway.last_stream_id)
    case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
        if header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 { owner.responseEnded(stream: header.stream_id) }
    default:
        break
    }
    return 0
}

func clientOnFrameSent(_ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ user: UnsafeMutableRawPointer?) -> Int32 {
    guard let frame else { return 0 }
    let header = frame.pointee.hd
    let type = UInt32(header.type)
    if type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue {
        connection(user).sent(stream: header.stream_id, endsStream: header.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0)
    }
    return 0
}

func clientOnFrameNotSent(_ session: OpaquePointer?, _ frame: UnsafePointer<nghttp2_frame>?, _ error: Int32,
                          _ user: UnsafeMutableRawPointer?) -> Int32 {
    guard let frame, UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue else { return 0 }
    connection(user).notSent(stream: frame.pointee.hd.stream_id)
    return 0
}

func clientOnStreamClose(_ session: OpaquePointer?, _ stream: Int32, _ errorCode: UInt32, _ user: UnsafeMutableRawPointer?) -> Int32 {
    connection(user).streamClosed(stream: stream, errorCode: errorCode, now: monotonicSeconds())
    return 0
}
