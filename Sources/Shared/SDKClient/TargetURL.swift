import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Where a load generator sends its requests: `http://` or `https://`, a host (name, IPv4 literal or
/// `[IPv6]` literal), a port and an optional path prefix. The Pushwoosh SDKs' base URL
/// (`…/json/1.3/`) is accepted too: its `json/1.3` suffix is dropped, so that the Device API is at
/// `prefix + /json/1.3/<method>` and the OneSignal helper's routes at `prefix + /onesignal/…`.
public struct TargetURL: Sendable, Equatable, CustomStringConvertible {
    public var isTLS: Bool
    /// The host as written, without brackets.
    public var host: String
    public var port: UInt16
    /// The path before `/json/1.3/`, without a trailing slash: "" for the root.
    public var pathPrefix: String

    public struct Invalid: Error, CustomStringConvertible {
        public let description: String
    }

    public init(isTLS: Bool, host: String, port: UInt16, pathPrefix: String = "") {
        self.isTLS = isTLS
        self.host = host
        self.port = port
        self.pathPrefix = pathPrefix
    }

    public init(parsing text: String) throws(Invalid) {
        let rest: Substring
        if text.hasPrefix("http://") {
            isTLS = false
            rest = text.dropFirst(7)
        } else if text.hasPrefix("https://") {
            isTLS = true
            rest = text.dropFirst(8)
        } else {
            throw Invalid(description: "must start with http:// or https://, got '\(text)'")
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        var path = String(rest.dropFirst(authority.count))
        if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = String(path[..<cut]) }
        guard !authority.isEmpty else { throw Invalid(description: "has no host: '\(text)'") }
        guard !authority.contains("@") else { throw Invalid(description: "must not carry user information: '\(text)'") }
        var hostPart: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw Invalid(description: "has an unclosed [IPv6] host: '\(text)'") }
            hostPart = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                throw Invalid(description: "has junk after the [IPv6] host: '\(text)'")
            }
        } else if let colon = authority.lastIndex(of: ":") {
            hostPart = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            hostPart = authority
        }
        guard !hostPart.isEmpty else { throw Invalid(description: "has no host: '\(text)'") }
        host = String(hostPart)
        if let portText {
            guard let value = UInt16(portText), value > 0 else { throw Invalid(description: "has a bad port '\(portText)'") }
            port = value
        } else {
            port = isTLS ? 443 : 80
        }
        while path.hasSuffix("/") { path.removeLast() }
        if path.hasSuffix("/json/1.3") { path.removeLast("/json/1.3".count) }
        pathPrefix = path
    }

    /// `Host` header value.
    public var hostHeader: String {
        let shown = host.contains(":") ? "[\(host)]" : host
        let defaultPort: UInt16 = isTLS ? 443 : 80
        return port == defaultPort ? shown : "\(shown):\(port)"
    }

    public var description: String { "\(isTLS ? "https" : "http")://\(hostHeader)\(pathPrefix)" }

    /// Whether the host is an IP literal (then TLS checks the certificate's IP address, not a name).
    public var hostIsIPLiteral: Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// Resolves the host (getaddrinfo, TCP) into the socket addresses to connect to, IPv4 first.
    public func resolve() throws(Invalid) -> [SocketAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw Invalid(description: "cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let current = node {
            if let address = current.pointee.ai_addr, current.pointee.ai_family == AF_INET || current.pointee.ai_family == AF_INET6 {
                let candidate = SocketAddress(address, length: current.pointee.ai_addrlen)
                if !addresses.contains(candidate) { addresses.append(candidate) }
            }
            node = current.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw Invalid(description: "\(host) has no IPv4 or IPv6 address") }
        return addresses.sorted { $0.family == AF_INET && $1.family != AF_INET }
    }
}
