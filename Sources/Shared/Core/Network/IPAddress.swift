import Foundation

/// An IPv4 or IPv6 address, and whether it belongs to this host or a private network rather than
/// the Internet: what a server that connects to addresses its clients give (Web Push endpoints)
/// refuses, so that no client can make it reach services behind its firewall.
public struct IPAddress: Sendable, Equatable, CustomStringConvertible {
    /// 4 bytes (IPv4) or 16 (IPv6), in network order.
    public let bytes: [UInt8]

    /// Nil unless `bytes` holds 4 or 16 bytes.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// The address `host` spells, read as the resolver reads a numeric host (every IPv4 form
    /// `inet_aton` takes, such as `127.1` or `2130706433`, and IPv6 without brackets), without any
    /// lookup; nil for a name.
    public init?(numericHost host: String) {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &found) == 0, let first = found else { return nil }
        defer { freeaddrinfo(found) }
        guard let raw = first.pointee.ai_addr, let address = IPAddress(socketAddress: UnsafePointer(raw)) else { return nil }
        self = address
    }

    /// The address of an `AF_INET` or `AF_INET6` socket address; nil for another family.
    public init?(socketAddress: UnsafePointer<sockaddr>) {
        switch Int32(socketAddress.pointee.sa_family) {
        case AF_INET:
            let raw = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            self.init(bytes: withUnsafeBytes(of: raw) { Array($0) })
        case AF_INET6:
            let raw = socketAddress.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
            self.init(bytes: withUnsafeBytes(of: raw) { Array($0) })
        default:
            return nil
        }
    }

    /// Whether the address is not on the Internet: IPv4 0/8 (this host), 10/8, 172.16/12 and
    /// 192.168/16 (private), 100.64/10 (carrier-grade NAT), 127/8 (loopback), 169.254/16 (link-local);
    /// IPv6 `::` and `::1`, fc00::/7 (unique-local), fe80::/10 (link-local), and an IPv4 address
    /// mapped (`::ffff:a.b.c.d`) or translated (`64:ff9b::a.b.c.d`) into IPv6 by the rules of IPv4.
    /// Multicast and broadcast addresses take no TCP connection and are not listed.
    public var isPrivate: Bool {
        if bytes.count == 4 { return Self.isPrivate(ipv4: bytes) }
        let prefix12 = Array(bytes.prefix(12))
        if prefix12 == [UInt8](repeating: 0, count: 10) + [0xFF, 0xFF]
            || prefix12 == [0x00, 0x64, 0xFF, 0x9B] + [UInt8](repeating: 0, count: 8) {
            return Self.isPrivate(ipv4: Array(bytes.suffix(4)))
        }
        if bytes.prefix(15).allSatisfy({ $0 == 0 }) && bytes[15] <= 1 { return true }
        return bytes[0] & 0xFE == 0xFC || (bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80)
    }

    static func isPrivate(ipv4 a: [UInt8]) -> Bool {
        switch (a[0], a[1]) {
        case (0, _), (10, _), (127, _): return true
        case (100, 64...127): return true
        case (169, 254): return true
        case (172, 16...31): return true
        case (192, 168): return true
        default: return false
        }
    }

    /// The address in its usual text form (`127.0.0.1`, `::1`).
    public var description: String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let written = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &text, socklen_t(text.count)) }
        return written == nil ? "?" : String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
