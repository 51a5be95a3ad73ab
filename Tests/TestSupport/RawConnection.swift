import Foundation
#if canImport(Glibc)
import Glibc
#endif
import SDKClient

/// A plain TCP connection to a loopback port that sends exactly the bytes it is given: for requests
/// no HTTP client would write (ambiguous framing, headers trickled a byte at a time).
package final class RawConnection {
    package let fd: Int32

    package init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw HTTPClient.Failure(description: "socket failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw HTTPClient.Failure(description: "connect to 127.0.0.1:\(port) failed: errno \(errno)")
        }
    }

    deinit { close(fd) }

    /// Sends `bytes`; false once the server has closed or reset the connection.
    @discardableResult
    package func send(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    @discardableResult
    package func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Everything the server sends until it closes the connection, waiting at most `seconds`
    /// between reads.
    package func readUntilClosed(seconds: Int = 3) -> String { read(seconds: seconds) { _ in false }.text }

    /// Everything the server sends until it closes the connection, and whether it closed it (false
    /// when `seconds` passed between two reads first).
    package func readAnswer(seconds: Int = 3) -> (text: String, closed: Bool) { read(seconds: seconds) { _ in false } }

    /// What the server sends up to the blank line that ends a response head (such as
    /// `HTTP/1.1 100 Continue`), waiting at most `seconds` between reads.
    package func readHead(seconds: Int = 3) -> String {
        read(seconds: seconds, byteByByte: true) { $0.suffix(4) == [13, 10, 13, 10] }.text
    }

    private func read(seconds: Int, byteByByte: Bool = false, until done: ([UInt8]) -> Bool) -> (text: String, closed: Bool) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: byteByByte ? 1 : 4096)
        var closed = false
        while !done(received) {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else {
                closed = count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)
                break
            }
            received += buffer[0..<count]
        }
        return (String(decoding: received, as: UTF8.self), closed)
    }

    /// True when the server has closed (or reset) the connection, looked at without waiting.
    package var isClosedByServer: Bool {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) == 1 else { return false }
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }
}
