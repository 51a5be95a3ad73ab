#if canImport(Glibc)
import Glibc
#endif

/// A non-blocking, close-on-exec TCP socket listening on an IPv4 or IPv6 literal (an IPv6 one
/// takes IPv6 only), with `SO_REUSEADDR`: what Herald's servers accept connections on.
public enum ListeningSocket {
    /// Why the socket could not listen, and at which step.
    public struct Failure: Error, Sendable {
        public enum Step: Sendable {
            /// `host` is not an address literal of its family (`errno` is EINVAL).
            case address
            case socket
            /// Binding or listening failed (the port taken, say).
            case bind
        }

        public let step: Step
        public let errno: Int32
    }

    /// Opens the socket on `host:port` (a `host` with ":" is IPv6) and returns it with the port it
    /// got (the kernel's choice when `port` is 0). `reusePort` lets several sockets share the port.
    public static func open(host: String, port: UInt16, reusePort: Bool = false) throws(Failure) -> (fd: Int32, port: UInt16) {
        var storage = sockaddr_storage()
        /// Copies `address` into `storage` and gives its length.
        func store<Address>(_ address: Address) -> socklen_t {
            withUnsafeBytes(of: address) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
            return socklen_t(MemoryLayout<Address>.size)
        }
        let length: socklen_t
        let family = host.contains(":") ? AF_INET6 : AF_INET
        if family == AF_INET6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            guard inet_pton(AF_INET6, host, &address.sin6_addr) == 1 else { throw Failure(step: .address, errno: EINVAL) }
            length = store(address)
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else { throw Failure(step: .address, errno: EINVAL) }
            length = store(address)
        }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(step: .socket, errno: errno) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if reusePort { setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size)) }
        if family == AF_INET6 { setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size)) }
        let bound = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
        guard bound == 0, listen(fd, 1024) == 0 else {
            let error = errno
            close(fd)
            throw Failure(step: .bind, errno: error)
        }
        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &actual) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) } }
        // sin_port and sin6_port sit at the same offset, right after the family.
        let boundPort = withUnsafeBytes(of: actual) { UInt16(bigEndian: $0.loadUnaligned(fromByteOffset: 2, as: UInt16.self)) }
        return (fd, boundPort)
    }
}
