import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/1.1 server on a free loopback port that answers every request the same scripted way,
/// including the ways a broken server misbehaves: 5xx, bodies that are not JSON, silence, closed
/// connections, garbage. For testing clients such as herald-load against what Herald never does.
/// A thread per connection; everything stops when the value is released.
package final class CannedHTTPServer: @unchecked Sendable {
    /// What the server does with each request it has read.
    package enum Behavior: Sendable, Equatable {
        /// Answers with this status and body (`Content-Type: application/json`), keeping the connection.
        case reply(status: Int, body: String)
        /// Answers like `reply`, each request `seconds` after it arrived (one at a time per connection).
        case slow(seconds: Double, status: Int, body: String)
        /// Reads the request and never answers (the connection stays open).
        case silent
        /// Closes the connection without answering.
        case close
        /// Writes bytes that are not HTTP, then closes.
        case garbage
        /// Stops listening after the pre-flight: every later connection is refused.
        case refuse
    }

    package let port: UInt16
    private let listener: Int32
    private let behavior: Behavior
    private let preflight: Bool
    private let listenerClosed = Atomic<Bool>(false)
    /// Open connection descriptors (closed on release) and the request count.
    private let state = Mutex<(connections: Set<Int32>, requests: Int, stopped: Bool)>(([], 0, false))

    /// - Parameter preflight: answer `POST …/json/1.3/getConfig` as Herald does for a known app
    ///   (herald-load's pre-flight), and every other request as `behavior` says.
    package init(_ behavior: Behavior, preflight: Bool = false) throws {
        self.behavior = behavior
        self.preflight = preflight || behavior == .refuse
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(listener, pointer, length) == 0, listen(listener, 512) == 0 else { return -1 }
                return getsockname(listener, pointer, &length)
            }
        }
        guard bound == 0 else {
            close(listener)
            throw POSIXError(.EADDRINUSE)
        }
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    /// Requests read so far.
    package var requests: Int { state.withLock { $0.requests } }

    package func stop() {
        let connections = state.withLock { state -> Set<Int32> in
            state.stopped = true
            defer { state.connections = [] }
            return state.connections
        }
        closeListener()
        for fd in connections {
            shutdown(fd, Int32(SHUT_RDWR))
        }
    }

    /// Closes the listening socket, once.
    private func closeListener() {
        guard !listenerClosed.exchange(true, ordering: .relaxed) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if errno == EINTR { continue }
                return
            }
            let accepted = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.connections.insert(fd)
                return true
            }
            guard accepted else {
                close(fd)
                return
            }
            let thread = Thread { [self] in serve(fd) }
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer {
            _ = state.withLock { $0.connections.remove(fd) }
            close(fd)
        }
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            // Read one request: the head, then Content-Length bytes of body.
            var headEnd: Int?
            while headEnd == nil {
                if let end = Self.find(buffer) {
                    headEnd = end
                    break
                }
                let count = recv(fd, &chunk, chunk.count, 0)
                if count <= 0 { return }
                buffer.append(contentsOf: chunk[0..<count])
            }
            let head = String(decoding: buffer[..<headEnd!], as: UTF8.self).lowercased()
            var length = 0
            for line in head.components(separatedBy: "\r\n") where line.hasPrefix("content-length:") {
                length = Int(line.dropFirst(15).trimmingCharacters(in: .whitespaces)) ?? 0
            }
            while buffer.count < headEnd! + length {
                let count = recv(fd, &chunk, chunk.count, 0)
                if count <= 0 { return }
                buffer.append(contentsOf: chunk[0..<count])
            }
            buffer.removeFirst(headEnd! + length)
            state.withLock { $0.requests += 1 }
            var reply: (status: Int, body: String)?
            let requestLine = head.prefix { $0 != "\r" }
            if preflight, requestLine.hasPrefix("post "), requestLine.contains("/json/1.3/getconfig ") {
                guard Self.write(fd, status: 200, body: "{\"status_code\":200,\"status_message\":\"OK\",\"response\":{}}") else { return }
                if behavior == .refuse { closeListener() }
                continue
            }
            switch behavior {
            case .reply(let status, let body):
                reply = (status, body)
            case .slow(let seconds, let status, let body):
                usleep(UInt32(seconds * 1_000_000))
                reply = (status, body)
            case .silent:
                // Keep reading (and never answer) until the client gives up.
                while recv(fd, &chunk, chunk.count, 0) > 0 {}
                return
            case .close, .refuse:
                return
            case .garbage:
                let junk = Array("SSH-2.0-OpenSSH_9.2 not http at all\r\n\r\n".utf8)
                _ = junk.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                return
            }
            if let (status, body) = reply, !Self.write(fd, status: status, body: body) { return }
        }
    }

    /// Writes one response; false when the connection broke.
    private static func write(_ fd: Int32, status: Int, body: String) -> Bool {
        let bytes = Array(body.utf8)
        let response = "HTTP/1.1 \(status) Canned\r\nContent-Type: application/json\r\nContent-Length: \(bytes.count)\r\n\r\n"
        let all = Array(response.utf8) + bytes
        var sent = 0
        while sent < all.count {
            let written = all[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if written <= 0 { return false }
            sent += written
        }
        return true
    }

    private static func find(_ buffer: [UInt8]) -> Int? {
        guard buffer.count >= 4 else { return nil }
        for index in 0...(buffer.count - 4) where buffer[index] == 13 && buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 {
            return index + 4
        }
        return nil
    }
}
