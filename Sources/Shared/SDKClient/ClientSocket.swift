internal import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// One non-blocking client connection, cleartext or TLS, for an event loop (`EventPoll`): every
/// call returns at once and says whether it would block and on what. The owner registers `fd` for
/// readiness, calls `finishConnect`, then `handshake` until `.done` (TLS), then `write` and `read`.
///
/// One owner, one thread at a time; the descriptor and the TLS session are released exactly once,
/// by `close()` or `deinit`.
public final class ClientSocket {
    public private(set) var fd: Int32
    private var tls: OpaquePointer?

    /// What went wrong, by the kind a load report counts, with the native cause.
    public struct Failure: Error, CustomStringConvertible {
        public enum Kind: Sendable, Equatable {
            /// ECONNREFUSED: nothing listens there.
            case refused
            /// ECONNRESET, EPIPE: the peer dropped the connection.
            case reset
            /// The TLS handshake or a TLS record failed (certificate, protocol).
            case tls
            /// Any other socket error (EHOSTUNREACH, EADDRNOTAVAIL, EMFILE…).
            case other
        }
        public let kind: Kind
        /// errno, or 0 for TLS errors.
        public let code: Int32
        public let detail: String
        public var description: String { detail }
    }

    /// What a `read` or `write` did.
    public enum Transfer {
        case bytes(Int)
        /// Nothing moved; wait until the socket is readable (`wantsWrite` false) or writable.
        case wouldBlock(wantsWrite: Bool)
        /// The peer closed the connection cleanly (read only).
        case closed
        case failed(Failure)
    }

    /// Progress of `handshake`.
    public enum Handshake {
        case done
        case wouldBlock(wantsWrite: Bool)
        case failed(Failure)
    }

    private init(fd: Int32) { self.fd = fd }

    deinit { close() }

    /// A new non-blocking socket with the connection to `address` under way (`EINPROGRESS`): wait
    /// until it is writable, then call `finishConnect`.
    public static func connect(to address: SocketAddress) throws(Failure) -> ClientSocket {
        let fd = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure(errno, "socket") }
        var noDelay: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        let result = address.bytes.withUnsafeBytes {
            Glibc.connect(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count))
        }
        if result != 0 && errno != EINPROGRESS {
            let code = errno
            Glibc.close(fd)
            throw failure(code, "connect to \(address.description)")
        }
        return ClientSocket(fd: fd)
    }

    /// After the socket became writable: nil when connected, else why not.
    public func finishConnect() -> Failure? {
        var code: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length) == 0 else { return Self.failure(errno, "connect") }
        return code == 0 ? nil : Self.failure(code, "connect")
    }

    /// Starts TLS on the connected socket: SNI and the certificate's name (or IP address) are
    /// checked against `host` when the context verifies.
    public func startTLS(_ context: TLSClientContext, host: String, hostIsIPLiteral: Bool) throws(Failure) {
        guard let ssl = SSL_new(context.context) else {
            throw Failure(kind: .tls, code: 0, detail: "TLS: \(TLSClientContext.lastError())")
        }
        tls = ssl
        SSL_set_fd(ssl, fd)
        SSL_set_connect_state(ssl)
        if !hostIsIPLiteral { _ = herald_ssl_set_sni(ssl, host) }
        if context.verifies {
            let checked = hostIsIPLiteral ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) : SSL_set1_host(ssl, host)
            guard checked == 1 else { throw Failure(kind: .tls, code: 0, detail: "TLS: cannot check the name \(host)") }
        }
    }

    /// Drives the TLS handshake; `.done` at once for a cleartext socket.
    public func handshake() -> Handshake {
        guard let ssl = tls else { return .done }
        let result = SSL_do_handshake(ssl)
        if result == 1 { return .done }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wouldBlock(wantsWrite: false)
        case SSL_ERROR_WANT_WRITE: return .wouldBlock(wantsWrite: true)
        default:
            let verify = SSL_get_verify_result(ssl)
            if verify != X509_V_OK {
                ERR_clear_error()
                return .failed(Failure(kind: .tls, code: 0,
                                       detail: "TLS: certificate rejected: \(String(cString: X509_verify_cert_error_string(verify)))"))
            }
            return .failed(tlsFailure(result, "TLS handshake"))
        }
    }

    /// Writes as much of `bytes` as the socket takes now.
    public func write(_ bytes: UnsafeRawBufferPointer) -> Transfer {
        if let ssl = tls {
            let result = SSL_write(ssl, bytes.baseAddress, Int32(bytes.count))
            if result > 0 { return .bytes(Int(result)) }
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ: return .wouldBlock(wantsWrite: false)
            case SSL_ERROR_WANT_WRITE: return .wouldBlock(wantsWrite: true)
            default: return .failed(tlsFailure(result, "TLS write"))
            }
        }
        let written = send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
        if written >= 0 { return .bytes(written) }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return .wouldBlock(wantsWrite: true) }
        return .failed(Self.failure(code, "send"))
    }

    /// Reads what has arrived, up to `buffer.count` bytes.
    public func read(into buffer: UnsafeMutableRawBufferPointer) -> Transfer {
        if let ssl = tls {
            let result = SSL_read(ssl, buffer.baseAddress, Int32(buffer.count))
            if result > 0 { return .bytes(Int(result)) }
            switch SSL_get_error(ssl, result) {
            case SSL_ERROR_WANT_READ: return .wouldBlock(wantsWrite: false)
            case SSL_ERROR_WANT_WRITE: return .wouldBlock(wantsWrite: true)
            case SSL_ERROR_ZERO_RETURN: return .closed
            case SSL_ERROR_SYSCALL where errno == 0 || result == 0:
                ERR_clear_error()
                return .closed
            default: return .failed(tlsFailure(result, "TLS read"))
            }
        }
        let count = recv(fd, buffer.baseAddress, buffer.count, 0)
        if count > 0 { return .bytes(count) }
        if count == 0 { return .closed }
        let code = errno
        if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return .wouldBlock(wantsWrite: false) }
        return .failed(Self.failure(code, "recv"))
    }

    /// Whether TLS holds decrypted bytes that `read` has not returned yet (no readiness event
    /// will announce them).
    public var hasBufferedBytes: Bool {
        guard let ssl = tls else { return false }
        return SSL_pending(ssl) > 0
    }

    /// Closes the connection (without a TLS close_notify: a load generator drops connections).
    public func close() {
        if let ssl = tls {
            SSL_free(ssl)
            tls = nil
        }
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    private func tlsFailure(_ result: Int32, _ what: String) -> Failure {
        let code = errno
        let detail = TLSClientContext.lastError()
        if detail == "unknown" && code != 0 {
            // The socket under TLS failed (reset, refused), not the TLS layer.
            return Self.failure(code, what)
        }
        return Failure(kind: .tls, code: 0, detail: "\(what): \(detail)")
    }

    static func failure(_ code: Int32, _ what: String) -> Failure {
        let kind: Failure.Kind
        switch code {
        case ECONNREFUSED: kind = .refused
        case ECONNRESET, EPIPE, ECONNABORTED: kind = .reset
        default: kind = .other
        }
        return Failure(kind: kind, code: code, detail: "\(what): \(String(cString: strerror(code)))")
    }
}
