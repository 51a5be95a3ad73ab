internal import COpenSSL

/// The TLS settings of a client: which certificates it trusts and whether it checks them. Wraps
/// one OpenSSL `SSL_CTX`.
///
/// `@unchecked Sendable`: the context is configured once in `init` and never changed afterwards;
/// OpenSSL allows `SSL_new` on one context from several threads at once, which is all that
/// `ClientSocket` does with it. Freed exactly once, in `deinit`.
public final class TLSClientContext: @unchecked Sendable {
    let context: OpaquePointer
    /// Whether the server's certificate chain and name are checked.
    public let verifies: Bool

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// - Parameter caFile: a PEM file of trusted CAs; nil trusts the system store.
    /// - Parameter verify: false accepts any certificate (`--insecure`).
    public init(caFile: String? = nil, verify: Bool = true) throws(Failure) {
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw Failure(description: "cannot create a TLS context: \(TLSClientContext.lastError())")
        }
        self.context = context
        verifies = verify
        _ = herald_ssl_ctx_set_min_tls12(context)
        _ = herald_ssl_ctx_set_mode(context, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
        if verify {
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
            if let caFile {
                guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                    throw Failure(description: "cannot load CA file \(caFile): \(TLSClientContext.lastError())")
                }
            } else if SSL_CTX_set_default_verify_paths(context) != 1 {
                throw Failure(description: "cannot load the system's trusted certificates: \(TLSClientContext.lastError())")
            }
        } else {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        }
    }

    deinit { SSL_CTX_free(context) }

    /// The oldest queued OpenSSL error as text (and the queue cleared), or "unknown".
    package static func lastError() -> String {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return "unknown" }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
