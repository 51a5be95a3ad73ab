internal import COpenSSL

/// A failure to set up the server: a key, certificate, TLS context or listening socket, with OpenSSL's
/// own reason when it gave one.
public struct HTTP2ServerError: Error, Sendable, CustomStringConvertible {
    public let message: String
    /// OpenSSL's error text (its oldest queued error), or empty.
    public let openSSLReason: String
    public var description: String { openSSLReason.isEmpty ? message : "\(message) (\(openSSLReason))" }

    public init(_ message: String) {
        self.message = message
        openSSLReason = ""
    }

    init(message: String, openSSLReason: String) {
        self.message = message
        self.openSSLReason = openSSLReason
    }

    /// `message` with OpenSSL's queued error, which is then cleared.
    static func openSSL(_ message: String) -> HTTP2ServerError {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return HTTP2ServerError(message) }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        return HTTP2ServerError(message: message, openSSLReason: String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
}
