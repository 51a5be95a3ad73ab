import Core

/// A browser's push subscription (the Push API's `PushSubscription`): the push service URL the
/// message is posted to, and the keys its payload is encrypted for. The Pushwoosh Web SDK registers
/// the endpoint as `push_token`, `p256dh` as `public_key` and `auth` as `auth_token`.
public struct WebSubscription: Sendable, Equatable {
    /// Length of the authentication secret.
    public static let authLength = 16

    /// An `https` URL.
    public let endpoint: String
    /// The user agent's public key: an uncompressed P-256 point (65 bytes).
    public let p256dh: [UInt8]
    /// The authentication secret (16 bytes).
    public let auth: [UInt8]

    /// Checks every part: `endpoint` is an `https` URL with a host, in printable ASCII without spaces,
    /// `p256dh` an uncompressed point on
    /// P-256, `auth` 16 bytes. The error names the field.
    public init(endpoint: String, p256dh: [UInt8], auth: [UInt8]) throws(WebPushError) {
        guard WebSubscription.origin(of: endpoint) != nil else {
            throw WebPushError("endpoint: not an https:// URL with a host (and a port from 1 to 65535) in printable ASCII without spaces")
        }
        do {
            try MessageCrypto.shared.check(point: p256dh)
        } catch {
            throw WebPushError("p256dh: \(error.message)")
        }
        guard auth.count == Self.authLength else { throw WebPushError("auth: must be \(Self.authLength) bytes, found \(auth.count)") }
        self.endpoint = endpoint
        self.p256dh = p256dh
        self.auth = auth
    }

    /// Keys as the Push API's `getKey()` results are usually written: base64 or base64url, padded
    /// or not (the Pushwoosh Web SDK sends standard base64).
    public init(endpoint: String, p256dh: String, auth: String) throws(WebPushError) {
        guard let key = Self.decodeKey(p256dh) else { throw WebPushError("p256dh: not base64") }
        guard let secret = Self.decodeKey(auth) else { throw WebPushError("auth: not base64") }
        try self.init(endpoint: endpoint, p256dh: key, auth: secret)
    }

    /// Bytes of base64 or base64url text, with or without padding; nil for anything else.
    public static func decodeKey(_ text: String) -> [UInt8]? {
        let trimmed = text.hasSuffix("==") ? text.dropLast(2) : text.hasSuffix("=") ? text.dropLast() : Substring(text)
        guard !trimmed.isEmpty, trimmed.utf8.allSatisfy({ byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }) else { return nil }
        return Base64URL.decode(String(trimmed))
    }

    /// The origin of an `https` URL (`https://host[:port]`, the host lower-cased, the port kept when
    /// it is not 443): the audience of the VAPID token for that push service. Nil unless `url`
    /// starts with `https://` (as the workers' transport requires) and has a host, and a port (when
    /// given) from 1 to 65535.
    public static func origin(of url: String) -> String? {
        guard let (host, port) = hostAndPort(of: url) else { return nil }
        let spelled = host.contains(":") ? "[\(host)]" : host
        return "https://" + (port == 443 ? spelled : "\(spelled):\(port)")
    }

    /// Whether `url`'s host is `localhost` (or a name under it, RFC 6761) or an address literal in
    /// any form the resolver reads that is not on the Internet (`IPAddress.isPrivate`): returns that
    /// host, or nil. Names are not looked up here; workers check the address a name resolves to
    /// before they connect.
    public static func privateHost(of url: String) -> String? {
        guard let (host, _) = hostAndPort(of: url) else { return nil }
        let name = host.hasSuffix(".") ? String(host.dropLast()) : host
        if name == "localhost" || name.hasSuffix(".localhost") { return host }
        return IPAddress(numericHost: host)?.isPrivate == true ? host : nil
    }

    /// The lower-cased host (an IPv6 address without its brackets) and port of an `https` URL; nil
    /// unless every byte of `url` is printable ASCII other than space (RFC 3986 percent-encodes the
    /// rest), so the URL cannot carry a line break or space into a request line.
    static func hostAndPort(of url: String) -> (host: String, port: Int)? {
        let scheme = "https://"
        guard url.hasPrefix(scheme), url.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        let rest = url.dropFirst(scheme.count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }.lowercased()
        guard !authority.contains("@") else { return nil }
        var host = Substring(authority), port: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard after.isEmpty || after.hasPrefix(":") else { return nil }
            port = after.isEmpty ? nil : after.dropFirst()
        } else if let colon = authority.firstIndex(of: ":") {
            host = authority[..<colon]
            port = authority[authority.index(after: colon)...]
        }
        guard !host.isEmpty else { return nil }
        guard let port else { return (String(host), 443) }
        guard !port.isEmpty, port.count <= 5, port.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(port), (1...65535).contains(number) else {
            return nil
        }
        return (String(host), number)
    }
}
