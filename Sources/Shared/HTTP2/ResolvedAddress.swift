import Core
#if canImport(Glibc)
import Glibc
#endif

/// A socket address found for a host and port (`getaddrinfo`, numeric hosts without a lookup).
struct ResolvedAddress {
    private var storage = sockaddr_storage()
    private var length: socklen_t = 0

    var family: Int32 { Int32(storage.ss_family) }

    /// The first address of `host` (IPv4 or IPv6) on `port`; throws the resolver's reason.
    static func resolve(host: String, port: UInt16) throws(HTTP2TransportError) -> ResolvedAddress {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &found)
        guard status == 0, let first = found else {
            throw HTTP2TransportError("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(found) }
        var address = ResolvedAddress()
        withUnsafeMutableBytes(of: &address.storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: Int(first.pointee.ai_addrlen)))
        }
        address.length = first.pointee.ai_addrlen
        return address
    }

    /// The IP address (nil for a family other than IPv4 and IPv6).
    var ipAddress: IPAddress? { withSockaddr { address, _ in IPAddress(socketAddress: address) } }

    func withSockaddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        withUnsafeBytes(of: storage) { body($0.baseAddress!.assumingMemoryBound(to: sockaddr.self), length) }
    }
}
