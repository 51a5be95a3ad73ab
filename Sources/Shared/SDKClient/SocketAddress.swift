#if canImport(Glibc)
import Glibc
#endif

/// A resolved IPv4 or IPv6 socket address, copied out of getaddrinfo's list.
public struct SocketAddress: Sendable, Equatable {
    /// The `sockaddr_in` or `sockaddr_in6` bytes.
    public let bytes: [UInt8]

    init(_ address: UnsafePointer<sockaddr>, length: socklen_t) {
        bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(length)))
    }

    public var family: Int32 {
        bytes.withUnsafeBytes { Int32($0.load(fromByteOffset: 0, as: sa_family_t.self)) }
    }

    private static func text(_ characters: [CChar]) -> String {
        String(decoding: characters.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `1.2.3.4:80` or `[::1]:80`.
    public var description: String {
        bytes.withUnsafeBytes { raw -> String in
            var text = [CChar](repeating: 0, count: 64)
            if family == AF_INET {
                var v4 = raw.load(as: sockaddr_in.self)
                inet_ntop(AF_INET, &v4.sin_addr, &text, 64)
                return "\(Self.text(text)):\(UInt16(bigEndian: v4.sin_port))"
            }
            var v6 = raw.load(as: sockaddr_in6.self)
            inet_ntop(AF_INET6, &v6.sin6_addr, &text, 64)
            return "[\(Self.text(text))]:\(UInt16(bigEndian: v6.sin6_port))"
        }
    }
}
