#if canImport(Glibc)
import Glibc
#endif

/// Where a request goes: an `https` URL split into its origin (host and port, the key connections
/// are kept by) and its path.
struct Origin: Hashable, Sendable {
    let host: String
    let port: UInt16
    /// `host` or `host:port` (the `:authority` sent), brackets kept for an IPv6 address.
    let authority: String

    /// Splits `url`; nil when it is not an `https://` URL with a host.
    static func split(_ url: String) -> (origin: Origin, path: String)? {
        let scheme = "https://"
        guard url.hasPrefix(scheme) else { return nil }
        let rest = url.dropFirst(scheme.count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = String(rest[..<slash])
        let path = slash == rest.endIndex ? "/" : String(rest[slash...])
        var host = authority
        var port: UInt16 = 443
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if after.hasPrefix(":") {
                guard let parsed = UInt16(after.dropFirst()) else { return nil }
                port = parsed
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            guard let parsed = UInt16(authority[authority.index(after: colon)...]) else { return nil }
            port = parsed
        }
        guard !host.isEmpty else { return nil }
        return (Origin(host: host, port: port, authority: authority), path)
    }

    /// Splits the URLs of one batch, which mostly share an origin (an app's pushes all go to one
    /// host): a URL on the previous one's origin reuses that `Origin`, and the same URL again its
    /// path as well, so that only a new path is allocated per request.
    struct Splitter {
        private var last: (url: String, originLength: Int, origin: Origin, path: String)?

        mutating func split(_ url: String) -> (origin: Origin, path: String)? {
            if let last {
                if url.utf8.elementsEqual(last.url.utf8) { return (last.origin, last.path) }
                let bytes = url.utf8
                if bytes.count > last.originLength, bytes.starts(with: last.url.utf8.prefix(last.originLength)) {
                    let slash = bytes.index(bytes.startIndex, offsetBy: last.originLength)
                    if bytes[slash] == UInt8(ascii: "/") {
                        let path = String(url[slash...])
                        self.last = (url, last.originLength, last.origin, path)
                        return (last.origin, path)
                    }
                }
            }
            guard let (origin, path) = Origin.split(url) else { return nil }
            last = (url, "https://".utf8.count + origin.authority.utf8.count, origin, path)
            return (origin, path)
        }
    }

    /// Whether `host` is a literal IPv4 or IPv6 address (checked as an address, not by name).
    static func isIPAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
