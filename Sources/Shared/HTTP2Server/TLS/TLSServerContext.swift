internal import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// A TLS server's settings: its certificate chain and key, TLS 1.2 or later, and ALPN that accepts
/// only `h2`. Wraps one OpenSSL `SSL_CTX`.
///
/// `@unchecked Sendable`: configured once in `init` and never changed; OpenSSL allows `SSL_new` on
/// one context from several threads at once. Freed exactly once, in `deinit`.
public final class TLSServerContext: @unchecked Sendable {
    let context: OpaquePointer

    /// - Parameters:
    ///   - certificateChain: PEM file, the server certificate first, then its issuers.
    ///   - privateKey: PEM file of the certificate's key.
    public init(certificateChain: String, privateKey: String) throws(HTTP2ServerError) {
        guard let context = SSL_CTX_new(TLS_server_method()) else { throw HTTP2ServerError.openSSL("SSL_CTX_new") }
        self.context = context
        _ = herald_ssl_ctx_set_min_tls12(context)
        herald_ssl_ctx_server_options(context)
        _ = herald_ssl_ctx_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS))
        guard SSL_CTX_use_certificate_chain_file(context, certificateChain) == 1 else {
            throw HTTP2ServerError.openSSL("cannot load the certificate chain \(certificateChain)")
        }
        guard SSL_CTX_use_PrivateKey_file(context, privateKey, SSL_FILETYPE_PEM) == 1 else {
            throw HTTP2ServerError.openSSL("cannot load the private key \(privateKey)")
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            throw HTTP2ServerError.openSSL("\(privateKey) is not the key of \(certificateChain)")
        }
        SSL_CTX_set_alpn_select_cb(context, selectH2, nil)
    }

    deinit { SSL_CTX_free(context) }
}

/// ALPN: picks `h2` from the client's list, or refuses the handshake (HTTP/2 only, as APNs and FCM).
private func selectH2(_ ssl: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
                      _ outLength: UnsafeMutablePointer<UInt8>?, _ offered: UnsafePointer<UInt8>?, _ offeredLength: UInt32,
                      _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let offered, let out, let outLength else { return SSL_TLSEXT_ERR_ALERT_FATAL }
    var index = 0
    let count = Int(offeredLength)
    while index < count {
        let length = Int(offered[index])
        if length == 2, index + 2 < count, offered[index + 1] == UInt8(ascii: "h"), offered[index + 2] == UInt8(ascii: "2") {
            out.pointee = offered + index + 1
            outLength.pointee = 2
            return SSL_TLSEXT_ERR_OK
        }
        index += 1 + length
    }
    return SSL_TLSEXT_ERR_ALERT_FATAL
}
