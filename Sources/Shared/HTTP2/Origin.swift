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
                // Compared byte for byte with memcmp: the generic comparisons of two UTF8Views
                // cost more than the split they save.
                var url = url, previous = last.url
                let reused: (path: String, isNew: Bool)? = url.withUTF8 { new in
                    previous.withUTF8 { old in
                        let length = last.originLength
                        guard let newBase = new.baseAddress, let oldBase = old.baseAddress, new.count > length,
                              memcmp(newBase, oldBase, length) == 0, new[length] == UInt8(ascii: "/") else { return nil }
                        if new.count == old.count, memcmp(newBase, oldBase, new.count) == 0 { return (last.path, false) }
                        return (String(decoding: UnsafeBufferPointer(rebasing: new[length...]), as: UTF8.self), true)
                    }
                }
                if let reused {
                    if reused.isNew { self.last = (url, last.originLength, last.origin, reused.path) }
                    return (last.origin, reused.path)
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
