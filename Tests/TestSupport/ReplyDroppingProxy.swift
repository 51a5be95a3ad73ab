import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on 127.0.0.1 in front of a server on loopback, which can lose one reply: after
/// `dropNextReply()`, the next bytes any server sends are thrown away and that connection is
/// closed on both sides, as when a network fails after the server has acted on a request but
/// before its answer arrived.
package final class ReplyDroppingProxy: Sendable {
    package let port: UInt16
    private let listener: Int32
    private let target: UInt16
    private let armed = Atomic<Bool>(false)
    /// Every socket open (both ends of each connection), closed by `stop`.
    private let sockets = Mutex<Set<Int32>>([])

    package init(to target: UInt16) throws {
        self.target = target
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 16) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard listener >= 0, bound else {
            throw PostgresServer.Failure(description: "the proxy cannot listen: \(String(cString: strerror(errno)))")
        }
        self.listener = listener
        port = UInt16(bigEndian: address.sin_port)
        Thread { [self] in accept() }.start()
    }

    deinit { stop() }

    /// Loses the next reply of any server connection (see the type's documentation).
    package func dropNextReply() {
        armed.store(true, ordering: .sequentiallyConsistent)
    }

    /// Whether the reply `dropNextReply` asked for has been dropped.
    package var dropped: Bool { !armed.load(ordering: .sequentiallyConsistent) }

    /// Closes the listener and every connection.
    package func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for socket in sockets.withLock({ $0 }) { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    private func accept() {
        while true {
            let client = Glibc.accept(listener, nil, nil)
            guard client >= 0 else { return }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: target)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                close(client)
                close(server)
                continue
            }
            sockets.withLock { $0.formUnion([client, server]) }
            let pumps = Pumps()
            for (source, destination, replies) in [(client, server, false), (server, client, true)] {
                Thread { [self] in
                    pump(from: source, to: destination, replies: replies)
                    // Both directions are shut down; the last pump to end closes the sockets.
                    if pumps.running.subtract(1, ordering: .sequentiallyConsistent).newValue == 0 {
                        sockets.withLock { $0.subtract([client, server]) }
                        close(client)
                        close(server)
                    }
                }.start()
            }
        }
    }

    /// Copies bytes until either side closes; then shuts both down, which ends the other pump too.
    private func pump(from source: Int32, to destination: Int32, replies: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            if replies && armed.compareExchange(expected: true, desired: false, ordering: .sequentiallyConsistent).exchanged { break }
            var sent = 0
            while sent < count {
                let written = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
                guard written > 0 else { break }
                sent += written
            }
            guard sent == count else { break }
        }
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(destination, Int32(SHUT_RDWR))
    }

    /// The two pumps of a connection that have not ended yet.
    private final class Pumps: Sendable {
        let running = Atomic<Int>(2)
    }
}
