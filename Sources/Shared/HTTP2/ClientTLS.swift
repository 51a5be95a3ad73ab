internal import COpenSSL
import SDKClient

/// The TLS client settings of one transport: ALPN `h2` (and `http/1.1` after it when the transport
/// speaks both), TLS 1.2 or later, certificates checked
/// against the system's store and an optional extra CA, sessions kept by the transport for resumption.
///
/// `@unchecked Sendable` invariant: configured in `init`, never changed afterwards; OpenSSL allows
/// `SSL_new` on one context from several threads. Freed exactly once, in `deinit`.
final class ClientTLS: @unchecked Sendable {
    let context: OpaquePointer

    init(caFile: String?, offersHTTP1: Bool) throws(HTTP2TransportError) {
        guard let context = SSL_CTX_new(TLS_client_method()) else { throw HTTP2TransportError("cannot create a TLS context: \(TLSClientContext.lastError())") }
        self.context = context
        _ = herald_ssl_ctx_set_min_tls12(context)
        _ = herald_ssl_ctx_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        _ = herald_ssl_ctx_client_session_cache(context)
        SSL_CTX_sess_set_new_cb(context, keepNewSession)
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        guard SSL_CTX_set_default_verify_paths(context) == 1 else {
            throw HTTP2TransportError("cannot load the system's trusted certificates: \(TLSClientContext.lastError())")
        }
        if let caFile, SSL_CTX_load_verify_locations(context, caFile, nil) != 1 {
            throw HTTP2TransportError("cannot load CA file \(caFile): \(TLSClientContext.lastError())")
        }
        var alpn: [UInt8] = [2] + Array("h2".utf8)
        if offersHTTP1 { alpn += [8] + Array("http/1.1".utf8) }
        guard SSL_CTX_set_alpn_protos(context, alpn, UInt32(alpn.count)) == 0 else {
            throw HTTP2TransportError("cannot offer ALPN: \(TLSClientContext.lastError())")
        }
    }

    deinit { SSL_CTX_free(context) }

    /// A client `SSL` for `host` on `fd`: SNI and name check for a host name, address check for an IP
    /// address; resuming `session` when given.
    func client(fd: Int32, host: String, session: OpaquePointer?) -> OpaquePointer? {
        guard let ssl = SSL_new(context) else { return nil }
        SSL_set_fd(ssl, fd)
        SSL_set_connect_state(ssl)
        if Origin.isIPAddress(host) {
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
        } else {
            _ = herald_ssl_set_sni(ssl, host)
            SSL_set1_host(ssl, host)
        }
        if let session { SSL_set_session(ssl, session) }
        return ssl
    }
}

/// OpenSSL hands over each session a server issues (TLS 1.3: each ticket, after the handshake): the
/// connection's loop keeps it for the origin's next connection, and takes the reference (1).
private func keepNewSession(_ ssl: OpaquePointer?, _ session: OpaquePointer?) -> Int32 {
    guard let ssl, let session, let owner = SSL_get_ex_data(ssl, 0) else { return 0 }
    let connection = Unmanaged<ClientConnection>.fromOpaque(owner).takeUnretainedValue()
    return connection.loop.keep(session, for: connection.origin) ? 1 : 0
}

/// A transport that cannot be set up (its TLS context), with the cause.
public struct HTTP2TransportError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
