internal import CNGHTTP2
internal import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// One accepted TLS connection speaking HTTP/2 through an nghttp2 server session: reads decrypted
/// bytes into the session, hands each complete request to the loop, and writes what the session
/// produces. Owned and used by one `ServerLoop` thread; the socket, `SSL` and session are freed
/// exactly once, in `close()`.
final class HTTP2Connection {
    let fd: Int32
    let tag: UInt64
    let context: HTTP2ConnectionContext
    unowned let loop: ServerLoop
    private let ssl: OpaquePointer
    private var session: OpaquePointer?
    private var handshaking = true
    private(set) var closed = false
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
        if handshaking {
            handshake()
            if handshaking || closed { return }
        }
        let buffer = loop.readBuffer
        while !closed {
            let count = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
            if count > 0 {
                forward.removeAll(keepingCapacity: true)
                frames.pass(UnsafeBufferPointer(start: buffer.baseAddress, count: Int(count)), into: &forward) { stream in
                    // A reset of a stream that is already over changes nothing but nghttp2's reset-rate count.
                    nghttp2_session_get_stream_remote_close(session, stream) < 0
                }
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
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue), value: loop.maxConcurrentStreams),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: 1 << 20),
        ]
        _ = nghttp2_submit_settings(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        _ = nghttp2_session_set_local_window_size(created, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 1 << 24)
        flush()
    }

    // MARK: Session callbacks

    func beginRequest(stream: Int32) {
        requests[stream] = PartialRequest()
    }

    func header(stream: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard requests[stream] != nil else { return }
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

    /// The request on `stream` ended (END_STREAM): answer it now or after the loop's delay.
    func requestEnded(stream: Int32) {
        guard let partial = requests.removeValue(forKey: stream) else { return }
        let request = HTTP2Request(method: partial.method, path: partial.path, headers: partial.headers, body: partial.body)
        let response = loop.handler.respond(to: request, context: context)
        loop.answer(self, stream: stream, response: response)
    }

    func streamClosed(stream: Int32) {
        requests[stream] = nil
        bodies[stream] = nil
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
        guard !closed, let session else { return }
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
    }

    /// Moves what the session has to send into `outgoing` and writes as much as the socket takes.
    func flush() {
        guard !closed, let session else { return }
        while outgoing.count - outgoingSent < 1 << 20 {
            var pointer: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &pointer)
            if count < 0 { return close() }
            if count == 0 { break }
            outgoing.append(contentsOf: UnsafeBufferPointer(start: pointer, count: count))
        }
        writeOutgoing()
        if !closed, outgoing.isEmpty, nghttp2_session_want_read(session) == 0, nghttp2_session_want_write(session) == 0 {
            close()
        }
    }

    private func writeOutgoing() {
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
    }
}

private func readResponseBody(_ session: OpaquePointer?, _ stream: Int32, _ buffer: UnsafeMutablePointer<UInt8>?, _ length: Int,
                              _ flags: UnsafeMutablePointer<UInt32>?, _ source: UnsafeMutablePointer<nghttp2_data_source>?,
                              _ user: UnsafeMutableRawPointer?) -> Int {
    guard let user, let buffer, let flags else { return Int(NGHTTP2_ERR_CALLBACK_FAILURE.rawValue) }
    return Unmanaged<HTTP2Connection>.fromOpaque(user).takeUnretainedValue().readBody(stream: stream, into: buffer, length: length, flags: flags)
}
