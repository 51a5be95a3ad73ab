internal import CNGHTTP2
internal import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// One accepted TLS connection speaking HTTP/2 through an nghttp2 server session: reads decrypted
/// bytes into the session, hands each complete request to the handler, carries out its action, and
/// writes what the session produces. When the session is over (GOAWAY sent or received, every stream
/// closed), the connection sends TLS close_notify, shuts the socket for writing and reads until the
/// client closes (at most the loop's drain time), so that what the client still sends meets an open
/// socket rather than a reset that could destroy the last answers on their way. Owned and used by
/// one `ServerLoop` thread; the socket, `SSL` and session are freed exactly once, in `close()`.
final class HTTP2Connection {
    let fd: Int32
    let tag: UInt64
    let context: HTTP2ConnectionContext
    unowned let loop: ServerLoop
    private let ssl: OpaquePointer
    private var session: OpaquePointer?
    private var handshaking = true
    private(set) var closed = false
    /// The session is over; the client's last bytes are read and dropped until it closes.
    private var finishing = false
    /// The handler made the connection go silent: nothing is read or written again.
    private var silent = false
    /// The highest stream whose request went to the handler.
    private var lastHandled: Int32 = 0
    /// The last-stream-id of the GOAWAY the connection sent: later streams are not processed.
    private var goAwayLastStream: Int32?
    /// The SETTINGS_MAX_CONCURRENT_STREAMS last announced.
    private var announcedStreams: UInt32 = 0
    /// Request streams open now (begun and not yet closed).
    private var openStreams: Set<Int32> = []
    /// Requests being received, by stream.
    private var requests: [Int32: PartialRequest] = [:]
    /// Response bodies being sent, by stream, and how much of each went out.
    private var bodies: [Int32: (bytes: [UInt8], sent: Int)] = [:]
    /// Received bytes on their way into the session, without the RST_STREAM frames of finished streams.
    private var frames = FrameFilter()
    private var forward: [UInt8] = []
    private var outgoing: [UInt8] = []
    private var outgoingSent = 0
    private var waitingToWrite = false

    struct PartialRequest {
        var method = ""
        var path = ""
        var headers: [(name: String, value: String)] = []
        var body: [UInt8] = []
        var neverIndexed: [String] = []
    }

    init(fd: Int32, tag: UInt64, ssl: OpaquePointer, context: HTTP2ConnectionContext, loop: ServerLoop) {
        self.fd = fd
        self.tag = tag
        self.ssl = ssl
        self.context = context
        self.loop = loop
    }

    // MARK: Events

    /// The socket is readable (or failed): go on with the handshake, or read and answer.
    func readable() {
        if silent { return }
        if handshaking {
            handshake()
            if handshaking || closed { return }
        }
        let buffer = loop.readBuffer
        while !closed && !silent {
            let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
            if count > 0 {
                if finishing { continue }
                forward.removeAll(keepingCapacity: true)
                let resets = frames.resetsSeen
                frames.pass(UnsafeBufferPointer(start: buffer.baseAddress, count: Int(count)), into: &forward) { stream in
                    // A reset of a stream that is already over changes nothing but nghttp2's reset-rate count.
                    nghttp2_session_get_stream_remote_close(session, stream) < 0
                }
                if frames.resetsSeen > resets { loop.counters.resetsReceived(frames.resetsSeen - resets) }
                let consumed = forward.withUnsafeBufferPointer { nghttp2_session_mem_recv(session, $0.baseAddress, $0.count) }
                if consumed < 0 { return close() }
                continue
            }
            let error = SSL_get_error(ssl, count)
            if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { break }
            ERR_clear_error()
            return close()
        }
        flush()
    }

    /// The socket is writable again: send what is waiting.
    func writable() {
        if silent || finishing { return }
        if handshaking {
            handshake()
            if handshaking || closed { return }
            readable()
            return
        }
        flush()
    }

    private func handshake() {
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            handshaking = false
            if SSL_session_reused(ssl) == 1 { loop.counters.sessionResumed() }
            var protocolName: UnsafePointer<UInt8>?
            var length: UInt32 = 0
            SSL_get0_alpn_selected(ssl, &protocolName, &length)
            guard length == 2 else { return close() }
            startSession()
            return
        }
        let error = SSL_get_error(ssl, result)
        if error == SSL_ERROR_WANT_READ {
            setWaitingToWrite(false)
        } else if error == SSL_ERROR_WANT_WRITE {
            setWaitingToWrite(true)
        } else {
            ERR_clear_error()
            close()
        }
    }

    private func startSession() {
        var created: OpaquePointer?
        guard nghttp2_session_server_new(&created, loop.callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0, let created else {
            return close()
        }
        session = created
        announcedStreams = loop.maxConcurrentStreamsUntilFirstAnswer ?? loop.maxConcurrentStreams
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: announcedStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        _ = nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        _ = nghttp2_session_set_local_window_size(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
        flush()
    }

    // MARK: Session callbacks

    func beginRequest(stream: Int32) {
        requests[stream] = PartialRequest()
        if openStreams.insert(stream).inserted { loop.counters.streamOpened(openOnConnection: openStreams.count) }
    }

    func header(stream: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, neverIndexed: Bool) {
        guard requests[stream] != nil else { return }
        if neverIndexed { requests[stream]!.neverIndexed.append(String(decoding: name, as: UTF8.self)) }
        let value = String(decoding: value, as: UTF8.self)
        if name.count == 7, name.elementsEqual(":method".utf8) {
            requests[stream]!.method = value
        } else if name.count == 5, name.elementsEqual(":path".utf8) {
            requests[stream]!.path = value
        } else {
            requests[stream]!.headers.append((String(decoding: name, as: UTF8.self), value))
        }
    }

    func data(stream: Int32, _ bytes: UnsafeBufferPointer<UInt8>) {
        requests[stream]?.body.append(contentsOf: bytes)
    }

    /// The request on `stream` ended (END_STREAM): carry out the handler's action on it (an answer
    /// goes now or after the loop's delay). Requests above a GOAWAY's last stream, or that arrive
    /// after the connection went silent, are left alone.
    func requestEnded(stream: Int32) {
        guard let partial = requests.removeValue(forKey: stream), let session else { return }
        loop.counters.requestReceived()
        if silent { return }
        if let last = goAwayLastStream, stream > last { return }
        let request = HTTP2Request(method: partial.method, path: partial.path, headers: partial.headers, body: partial.body,
                                   neverIndexed: partial.neverIndexed)
        switch loop.handler.act(on: request, context: context) {
        case .respond(let response):
            lastHandled = max(lastHandled, stream)
            loop.answer(self, stream: stream, response: response)
        case .refuse:
            lastHandled = max(lastHandled, stream)
            _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), stream, NGHTTP2_REFUSED_STREAM.rawValue)
        case .goAway:
            // Once the GOAWAY is sent, nghttp2 closes the streams above its last id and ignores new ones.
            goAwayLastStream = lastHandled
            _ = nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), lastHandled, NGHTTP2_NO_ERROR.rawValue, nil, 0)
        case .goSilent:
            silent = true
            loop.poll.remove(fd)
        }
    }

    func streamClosed(stream: Int32) {
        requests[stream] = nil
        bodies[stream] = nil
        if openStreams.remove(stream) != nil { loop.counters.streamClosed() }
    }

    /// Copies up to `length` bytes of `stream`'s response body into `buffer`; sets EOF at the end.
    func readBody(stream: Int32, into buffer: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        guard let (bytes, sent) = bodies[stream] else {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            return 0
        }
        let count = min(length, bytes.count - sent)
        bytes.withUnsafeBufferPointer { source in
            buffer.update(from: source.baseAddress! + sent, count: count)
        }
        if sent + count == bytes.count {
            flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
            bodies[stream] = nil
        } else {
            bodies[stream]!.sent = sent + count
        }
        return count
    }

    // MARK: Answers and writing

    /// Submits `response` on `stream` (a no-op once the connection closed) and sends it.
    func submit(stream: Int32, response: HTTP2Response) {
        guard !closed, !silent, let session else { return }
        // Every name and value in one buffer; nghttp2 copies them before nghttp2_submit_response returns.
        var blob: [UInt8] = []
        var spans: [(name: Int, nameLength: Int, value: Int, valueLength: Int)] = []
        func add(_ name: String, _ value: String) {
            let nameStart = blob.count
            blob.append(contentsOf: name.utf8)
            let valueStart = blob.count
            blob.append(contentsOf: value.utf8)
            spans.append((nameStart, valueStart - nameStart, valueStart, blob.count - valueStart))
        }
        add(":status", String(response.status))
        for header in response.headers { add(header.name, header.value) }
        if !response.body.isEmpty {
            add("content-length", String(response.body.count))
            bodies[stream] = (response.body, 0)
        }
        let result: Int32 = blob.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            let fieldList = spans.map {
                nghttp2_nv(name: base + $0.name, value: base + $0.value, namelen: $0.nameLength, valuelen: $0.valueLength,
                           flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
            }
            if response.body.isEmpty {
                return nghttp2_submit_response(session, stream, fieldList, fieldList.count, nil)
            }
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: nil), read_callback: readResponseBody)
            return nghttp2_submit_response(session, stream, fieldList, fieldList.count, &provider)
        }
        if result != 0 { bodies[stream] = nil }
        if announcedStreams != loop.maxConcurrentStreams {
            // The first answer: the full stream limit from now on.
            announcedStreams = loop.maxConcurrentStreams
            var settings = nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: announcedStreams)
            _ = nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, 1)
        }
    }

    /// Moves what the session has to send into `outgoing` and writes as much as the socket takes.
    func flush() {
        guard !closed, !silent, !finishing, let session else { return }
        while outgoing.count - outgoingSent < 1 << 20 {
            var pointer: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &pointer)
            if count < 0 { return close() }
            if count == 0 { break }
            outgoing.append(contentsOf: UnsafeBufferPointer(start: pointer, count: count))
        }
        writeOutgoing()
        if !closed, outgoing.isEmpty, nghttp2_session_want_read(session) == 0, nghttp2_session_want_write(session) == 0 {
            finish()
        }
    }

    /// The session is over and everything is written: close_notify, then wait for the client to close.
    private func finish() {
        finishing = true
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
        _ = shutdown(fd, Int32(SHUT_WR))
        setWaitingToWrite(false)
        loop.drain(self)
    }

    private func writeOutgoing() {
        guard !silent else { return }
        while outgoingSent < outgoing.count {
            let count = outgoing.withUnsafeBufferPointer { buffer in
                SSL_write(ssl, buffer.baseAddress! + outgoingSent, Int32(min(buffer.count - outgoingSent, Int(Int32.max))))
            }
            if count > 0 {
                outgoingSent += Int(count)
                continue
            }
            let error = SSL_get_error(ssl, count)
            if error == SSL_ERROR_WANT_WRITE || error == SSL_ERROR_WANT_READ {
                setWaitingToWrite(true)
                return
            }
            ERR_clear_error()
            return close()
        }
        outgoing.removeAll(keepingCapacity: outgoing.capacity <= 1 << 20)
        outgoingSent = 0
        setWaitingToWrite(false)
        // The session may have more to send than one round took (large bodies).
        if let session, nghttp2_session_want_write(session) != 0 { flush() }
    }

    private func setWaitingToWrite(_ waiting: Bool) {
        guard waiting != waitingToWrite, !closed else { return }
        waitingToWrite = waiting
        loop.poll.modify(fd, tag: tag, interest: waiting ? [.readable, .writable] : .readable)
    }

    /// Closes the connection (once): the socket leaves the loop, the session and TLS state are freed.
    func close() {
        guard !closed else { return }
        closed = true
        loop.remove(self)
        if let session { nghttp2_session_del(session) }
        session = nil
        SSL_free(ssl)
        Glibc.close(fd)
        requests.removeAll()
        bodies.removeAll()
        for _ in openStreams { loop.counters.streamClosed() }
        openStreams.removeAll()
    }
}

private func readResponseBody(_ session: OpaquePointer?, _ stream: Int32, _ buffer: UnsafeMutablePointer<UInt8>?, _ length: Int,
                              _ flags: UnsafeMutablePointer<UInt32>?, _ source: UnsafeMutablePointer<nghttp2_data_source>?,
                              _ user: UnsafeMutableRawPointer?) -> Int {
    guard let user, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    return Unmanaged<HTTP2Connection>.fromOpaque(user).takeUnretainedValue().readBody(stream: stream, into: buffer, length: length, flags: flags)
}
