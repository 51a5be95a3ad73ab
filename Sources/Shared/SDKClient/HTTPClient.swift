internal import COpenSSL
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking HTTP/1.1 client for one host on loopback or a private network, keeping its
/// connection alive between requests. It writes exactly the bytes it is given (malformed JSON,
/// oversized bodies, form encoding), so tests can probe the server's edges, and it is cheap enough
/// per request for a load generator.
///
/// One instance is one connection: use it from one thread at a time. A request that finds the
/// kept-alive connection closed by the server (before any byte of an answer came back) is sent once
/// more on a new connection. With a `TLSClientContext` it speaks HTTPS (the certificate is checked
/// against `host` when the context verifies).
public final class HTTPClient {
    public struct Response: Sendable {
        public let status: Int
        /// Header names in lower case.
        public let headers: [String: String]
        public let body: [UInt8]
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    public let host: String
    public let port: UInt16
    public let tls: TLSClientContext?
    private var socket: Int32 = -1
    /// The TLS session on `socket`, when `tls` is set.
    private var session: OpaquePointer?
    private var buffered: [UInt8] = []
    /// What each `recv` reads into, allocated once per client.
    private var chunk = [UInt8](repeating: 0, count: 65536)

    /// `host` is an IPv4 literal (default 127.0.0.1) or a name that resolves to an IPv4 address.
    public init(host: String = "127.0.0.1", port: UInt16, tls: TLSClientContext? = nil) {
        self.host = host
        self.port = port
        self.tls = tls
    }

    deinit { disconnect() }

    /// Sends one request and reads its response. `Host` and `Content-Length` (for POST or a
    /// non-empty body) are added; `headers` come as given.
    public func request(_ method: String, _ path: String, body: [UInt8] = [], headers: [(String, String)] = [],
                        timeoutSeconds: Int = 10) throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        let bytes = Array(head.utf8) + body
        let reused = socket >= 0
        do {
            return try exchange(bytes, method: method, timeoutSeconds: timeoutSeconds)
        } catch is StaleConnection {
            guard reused else { throw Failure(description: "no HTTP response (the server closed the connection)") }
            return try exchange(bytes, method: method, timeoutSeconds: timeoutSeconds)
        }
    }

    /// Closes the connection; the next request opens a new one.
    public func disconnect() {
        if let session {
            SSL_free(session)
            self.session = nil
        }
        if socket >= 0 { close(socket) }
        socket = -1
        buffered.removeAll()
    }

    /// The server closed a kept-alive connection before answering anything.
    private struct StaleConnection: Error {}

    private func exchange(_ bytes: [UInt8], method: String, timeoutSeconds: Int) throws -> Response {
        if socket < 0 { try connect(timeoutSeconds: timeoutSeconds) }
        var sent = 0
        while sent < bytes.count {
            let written = bytes[sent...].withUnsafeBytes { chunk -> Int in
                if let session { return Int(SSL_write(session, chunk.baseAddress, Int32(chunk.count))) }
                return send(socket, chunk.baseAddress, chunk.count, Int32(MSG_NOSIGNAL))
            }
            if written <= 0 { break }  // the server may answer (413) before reading everything
            sent += written
        }
        do {
            let response = try readResponse(method: method)
            if response.headers["connection"]?.lowercased() == "close" { disconnect() }
            return response
        } catch {
            disconnect()
            throw error
        }
    }

    private func connect(timeoutSeconds: Int) throws {
        let fd = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed: errno \(errno)") }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var noDelay: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        if inet_pton(AF_INET, host, &address.sin_addr) != 1 {
            let resolved = (try? TargetURL(isTLS: false, host: host, port: port).resolve())?.first { $0.family == AF_INET }
            guard let resolved else {
                close(fd)
                throw Failure(description: "\(host) is not an IPv4 address and does not resolve to one")
            }
            address = resolved.bytes.withUnsafeBytes { $0.load(as: sockaddr_in.self) }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let code = errno
            close(fd)
            throw Failure(description: "connect to \(host):\(port) failed: errno \(code)")
        }
        socket = fd
        buffered.removeAll()
        if let tls { try startTLS(tls) }
    }

    /// The TLS handshake on the connected socket (blocking, bounded by the receive timeout).
    private func startTLS(_ tls: TLSClientContext) throws {
        guard let ssl = SSL_new(tls.context) else {
            disconnect()
            throw Failure(description: "TLS: \(TLSClientContext.lastError())")
        }
        session = ssl
        SSL_set_fd(ssl, socket)
        var literal = in_addr()
        let isIP = inet_pton(AF_INET, host, &literal) == 1
        if !isIP { _ = herald_ssl_set_sni(ssl, host) }
        if tls.verifies {
            let checked = isIP ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) : SSL_set1_host(ssl, host)
            guard checked == 1 else {
                disconnect()
                throw Failure(description: "TLS: cannot check the name \(host)")
            }
        }
        guard SSL_connect(ssl) == 1 else {
            let verify = SSL_get_verify_result(ssl)
            let reason = verify != X509_V_OK
                ? "certificate rejected: \(String(cString: X509_verify_cert_error_string(verify)))" : TLSClientContext.lastError()
            ERR_clear_error()
            disconnect()
            throw Failure(description: "TLS handshake with \(host):\(port) failed: \(reason)")
        }
    }

    /// Reads more bytes into `buffered`; false at end of stream.
    private func fill() throws -> Bool {
        if let session {
            let count = Int(SSL_read(session, &chunk, Int32(chunk.count)))
            if count <= 0 {
                let error = SSL_get_error(session, Int32(count))
                ERR_clear_error()
                if error == SSL_ERROR_ZERO_RETURN || (error == SSL_ERROR_SYSCALL && errno == 0) { return false }
                throw Failure(description: "TLS receive failed: error \(error), errno \(errno)")
            }
            buffered.append(contentsOf: chunk[0..<count])
            return true
        }
        let count = recv(socket, &chunk, chunk.count, 0)
        if count < 0 { throw Failure(description: "receive failed: errno \(errno)") }
        if count == 0 { return false }
        buffered.append(contentsOf: chunk[0..<count])
        return true
    }

    private func readResponse(method: String) throws -> Response {
        let separator: [UInt8] = [13, 10, 13, 10]
        var end: Int?
        var searched = 0
        while end == nil {
            if buffered.count >= 4 {
                end = (max(0, searched - 3)..<(buffered.count - 3)).first { buffered[$0..<$0 + 4].elementsEqual(separator) }
                searched = buffered.count
            }
            if end == nil {
                let wasEmpty = buffered.isEmpty
                guard try fill() else {
                    if wasEmpty { throw StaleConnection() }
                    throw Failure(description: "no HTTP response (\(buffered.count) bytes)")
                }
            }
        }
        let headerEnd = end!
        let lines = String(decoding: buffered[..<headerEnd], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { throw Failure(description: "bad status line \(lines[0])") }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        buffered.removeFirst(headerEnd + 4)
        let body: [UInt8]
        if method == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status) {
            body = []
        } else if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            body = try readChunked()
        } else if let length = headers["content-length"].flatMap(Int.init) {
            while buffered.count < length {
                guard try fill() else { throw Failure(description: "body ended after \(buffered.count) of \(length) bytes") }
            }
            body = Array(buffered[..<length])
            buffered.removeFirst(length)
        } else {
            while try fill() {}
            body = buffered
            disconnect()
        }
        return Response(status: status, headers: headers, body: body)
    }

    private func readChunked() throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let sizeLine = try readLine()
            guard let size = Int(sizeLine.split(separator: ";")[0].trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw Failure(description: "bad chunk size \(sizeLine)")
            }
            if size == 0 {
                while try !readLine().isEmpty {}
                return body
            }
            while buffered.count < size + 2 {
                guard try fill() else { throw Failure(description: "chunked body ended early") }
            }
            body.append(contentsOf: buffered[..<size])
            buffered.removeFirst(size + 2)
        }
    }

    private func readLine() throws -> String {
        while true {
            if let index = buffered.indices.dropLast().first(where: { buffered[$0] == 13 && buffered[$0 + 1] == 10 }) {
                let line = String(decoding: buffered[..<index], as: UTF8.self)
                buffered.removeFirst(index + 2)
                return line
            }
            guard try fill() else { throw Failure(description: "connection closed inside a chunked body") }
        }
    }
}
