import Foundation

/// The form of a queue endpoint in the configuration, checked when the file is loaded: a typo then
/// stops start-up naming its key (exit 2) before a database is opened, instead of failing the bind
/// or connect afterwards.
enum QueueEndpoint {
    /// The longest path a Unix socket (`ipc://`) may have, in bytes (`sun_path` less its NUL).
    static let maximumPathBytes = 107

    /// Why `endpoint` is neither `tcp://host:port` (port 1–65535) nor `ipc://path` nor
    /// `inproc://name`, or nil.
    static func problem(_ endpoint: String) -> String? {
        for scheme in ["ipc://", "inproc://"] where endpoint.hasPrefix(scheme) {
            let path = endpoint.dropFirst(scheme.count)
            if path.isEmpty { return "\(endpoint) names no path" }
            if scheme == "ipc://" && path.utf8.count > maximumPathBytes {
                return "\(endpoint): a Unix socket path has at most \(maximumPathBytes) bytes"
            }
            return nil
        }
        guard endpoint.hasPrefix("tcp://") else {
            return "expected a ZeroMQ endpoint such as tcp://127.0.0.1:5557, found \(endpoint)"
        }
        guard let (host, port) = hostAndPort(endpoint), !host.isEmpty else {
            return "\(endpoint): expected tcp://host:port"
        }
        guard let number = UInt16(port), number > 0 else {
            return "\(endpoint): the port must be a number from 1 to 65535"
        }
        return nil
    }

    /// Why ingest cannot listen on the tcp endpoint `endpoint`, or nil: ZeroMQ binds `*`, an IP
    /// address or a network interface's name, and resolves no host names.
    static func bindProblem(_ endpoint: String) -> String? {
        guard let (host, _) = hostAndPort(endpoint) else { return nil }
        if host == "*" || isAddress(host) || if_nametoindex(host) != 0 { return nil }
        return "\(endpoint): cannot listen on \(host); a bind takes *, an IP address or a network interface's name, not a host name"
    }

    /// Whether a listening endpoint is reachable from this host only: ipc, inproc, or tcp on a
    /// loopback address (a tcp endpoint without a port is not).
    static func isLocal(_ endpoint: String) -> Bool {
        guard endpoint.hasPrefix("tcp://") else { return true }
        guard let (host, _) = hostAndPort(endpoint) else { return false }
        return host.hasPrefix("127.") || host == "::1" || host == "lo"
    }

    /// Whether `host` is an IPv4 address or an IPv6 one (a link-local one may name its interface
    /// after `%`, by name or number, as ZeroMQ allows).
    static func isAddress(_ host: String) -> Bool {
        var bytes = in6_addr()
        var bare = host
        if let percent = bare.firstIndex(of: "%") {
            let zone = String(bare[bare.index(after: percent)...])
            guard UInt32(zone) != nil || if_nametoindex(zone) != 0 else { return false }
            bare = String(bare[..<percent])
            return inet_pton(AF_INET6, bare, &bytes) == 1
        }
        return inet_pton(AF_INET, bare, &bytes) == 1 || inet_pton(AF_INET6, bare, &bytes) == 1
    }

    /// The host and port of `tcp://host:port`, split at the last colon, an IPv6 address without its
    /// brackets; nil for another scheme or without a colon.
    private static func hostAndPort(_ endpoint: String) -> (host: String, port: String)? {
        guard endpoint.hasPrefix("tcp://") else { return nil }
        let address = endpoint.dropFirst("tcp://".count)
        guard let colon = address.lastIndex(of: ":") else { return nil }
        var host = address[..<colon]
        if host.hasPrefix("[") && host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        return (String(host), String(address[address.index(after: colon)...]))
    }
}
