internal import CMicroHTTPD
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Core

/// Why the HTTP server could not start.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public let errno: Int32
    public var description: String { "\(message) (errno \(errno): \(String(cString: strerror(errno))))" }
}

/// Where a request is handled.
public enum HTTPDispatch: Sendable {
    /// On the I/O thread that read it: for quick, non-blocking work (reads).
    case inline
    /// Handed to the server's `offload` function with the connection suspended meanwhile: for work
    /// that waits, such as writes that share a group commit. The I/O threads keep serving others.
    case offload
}

/// An HTTP/1.1 server (libmicrohttpd, keep-alive, an internal epoll thread pool). A request head that
/// breaks RFC 9112 (`RequestHead`) is answered 400, 414 or 431 and its connection closed before any
/// handler runs, so nothing pipelined behind it is read. Bodies larger than
/// `bodyLimit` allows for their method and path (by default `maxBodyBytes`) are answered 413
/// without reaching a handler. `classify` decides per request whether
/// `handler` runs inline on an I/O thread, or `offload` takes the request and answers later.
/// Connections that miss the header or body deadline are cut off, and at `connectionLimit` new
/// connections push out those still waiting for headers, or get 503 (`ConnectionTable`).
///
/// `@unchecked Sendable` invariant: the daemon pointer is written only by `start`/`stop`, which the
/// owner calls from one thread; the closures are immutable and `@Sendable`.
public final class HTTPServer: @unchecked Sendable {
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse
    /// Takes a request and calls `respond` exactly once, from any thread.
    public typealias Offload = @Sendable (HTTPRequest, _ respond: @escaping @Sendable (HTTPResponse) -> Void) -> Void
    /// The answer the server itself gives before any handler runs (413 for a body over the limit,
    /// 503 while stopping), in the reply shape the application's clients read.
    public typealias Refusal = @Sendable (_ status: Int, _ message: String) -> HTTPResponse

    let settings: HTTPSettings
    let refusal: Refusal
    let classify: @Sendable (HTTPRequest) -> HTTPDispatch
    /// The largest body a request with this method and path may send.
    let bodyLimit: @Sendable (_ method: String, _ path: String) -> Int
    let handler: Handler
    let offload: Offload
    /// Offloaded requests whose connection is suspended: libmicrohttpd must not be stopped while
    /// any remain (it aborts), so `stop` waits for them.
    let suspended = Atomic<Int>(0)
    /// Set by `stop`: requests that would be offloaded are answered 503 instead of suspended.
    let stopping = Atomic<Bool>(false)
    let connections: ConnectionGuard
    private var daemon: OpaquePointer?

    public init(settings: HTTPSettings, classify: @escaping @Sendable (HTTPRequest) -> HTTPDispatch = { _ in .inline },
                offload: Offload? = nil, bodyLimit: (@Sendable (_ method: String, _ path: String) -> Int)? = nil,
                refusal: @escaping Refusal = { status, message in .json(["error": .string(message)], status: status) },
                counters: HTTPConnectionCounters = HTTPConnectionCounters(),
                handler: @escaping Handler) {
        self.settings = settings
        self.bodyLimit = bodyLimit ?? { [maxBodyBytes = settings.maxBodyBytes] _, _ in maxBodyBytes }
        self.connections = ConnectionGuard(limits: ConnectionTable.Limits(settings), counters: counters)
        self.refusal = refusal
        self.classify = classify
        self.handler = handler
        self.offload = offload ?? { request, respond in respond(handler(request)) }
    }

    /// The port the server listens on (differs from the configured one when that was 0).
    public private(set) var port: UInt16 = 0

    public func start() throws(HTTPServerError) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        // libmicrohttpd's own limit sits above ours, so that a connection beyond ours is accepted and
        // can push out a waiting one or be answered 503 instead of waiting in the kernel's queue. It
        // splits its limit among the I/O threads: leave each some room.
        let hardLimit = settings.connectionLimit + max(settings.connectionLimit / 4, 16 * settings.threads)
        guard let started = herald_mhd_start(
            settings.host, settings.port, UInt32(settings.threads), UInt32(hardLimit),
            UInt32(settings.idleTimeoutSeconds), httpAccessHandler, context, httpRequestCompleted, context,
            httpConnectionNotified, context, httpTargetSeen, nil)
        else {
            throw HTTPServerError(message: "cannot listen on \(settings.listen)", errno: Glibc.errno)
        }
        daemon = started
        port = herald_mhd_bound_port(started)
        connections.startSweeping()
    }

    /// Stops accepting connections and waits for the server's threads. Stop whatever serves
    /// `offload` only after this returns.
    public func stop() {
        guard let daemon else { return }
        // Stop accepting (the listening socket becomes ours to close), let every suspended request
        // get its answer, then stop.
        stopping.store(true, ordering: .sequentiallyConsistent)
        let listener = MHD_quiesce_daemon(daemon)
        if listener >= 0 { close(listener) }
        let deadline = monotonicSeconds() + 30
        while suspended.load(ordering: .sequentiallyConsistent) > 0, monotonicSeconds() < deadline { usleep(5_000) }
        usleep(50_000)
        MHD_stop_daemon(daemon)
        connections.stopSweeping()
        self.daemon = nil
    }

    deinit { stop() }
}

/// Body bytes collected for one request while libmicrohttpd feeds them in, and the response of an
/// offloaded request. `@unchecked Sendable` invariant: the offload side writes `response` while the
/// connection is suspended, and the I/O thread reads it only after `MHD_resume_connection`.
final class RequestState: @unchecked Sendable {
    /// The request target's length as received (up to a NUL), and whether it holds only visible
    /// bytes; nil until `httpTargetSeen` saw it.
    var targetLength: Int?
    var targetIsClean = false
    /// Set by the access handler's first call, once the head is checked.
    var started = false
    var body: [UInt8] = []
    /// The body limit of this request's method and path.
    var limit = 0
    var tooLarge = false
    var response: HTTPResponse?
}

/// A suspended connection, resumed from whichever thread finishes its request. `@unchecked
/// Sendable` invariant: libmicrohttpd allows `MHD_resume_connection` from any thread, and a
/// suspended connection stays valid until it is resumed.
struct SuspendedConnection: @unchecked Sendable {
    let connection: OpaquePointer?
    let state: RequestState
    let server: HTTPServer

    func resume(with response: HTTPResponse) {
        state.response = response
        MHD_resume_connection(connection)
        server.suspended.subtract(1, ordering: .sequentiallyConsistent)
    }
}

private func reply(_ connection: OpaquePointer?, _ response: HTTPResponse) -> MHD_Result {
    let handle = response.body.withUnsafeBytes { bytes in
        MHD_create_response_from_buffer(bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress),
                                        HERALD_MHD_RESPMEM_MUST_COPY)
    }
    guard let handle else { return HERALD_MHD_NO }
    for (name, value) in response.headers {
        MHD_add_response_header(handle, name, value)
    }
    // Every 503 tells the client when to come back.
    if response.status == 503, !response.headers.contains(where: { $0.0.lowercased() == "retry-after" }) {
        MHD_add_response_header(handle, "Retry-After", "1")
    }
    let result = MHD_queue_response(connection, UInt32(response.status), handle)
    MHD_destroy_response(handle)
    return result
}

private final class ValueCollector {
    var values: [String: String] = [:]
    let lowercaseKeys: Bool
    init(lowercaseKeys: Bool) { self.lowercaseKeys = lowercaseKeys }
}

/// The request headers handlers use, lower-cased. The server reads only these, in one pass over the
/// request's fields; the first of a repeated name is kept.
let httpInterestingHeaders: [String] = [
    "content-type", "authorization", "x-retry-count", "accept", "cookie", "origin", "host", "x-forwarded-for", "if-none-match", "range",
]

/// The interesting headers' names as bytes, grouped by length for the one-pass match.
private let interestingNamesByLength: [Int: [(name: String, bytes: [UInt8])]] =
    Dictionary(grouping: httpInterestingHeaders.map { (name: $0, bytes: Array($0.utf8)) }, by: { $0.bytes.count })

private func interestingHeaders(_ connection: OpaquePointer?) -> [String: String] {
    var headers: [String: String] = [:]
    withUnsafeMutablePointer(to: &headers) { pointer in
        _ = MHD_get_connection_values_n(connection, HERALD_MHD_HEADER_KIND, { context, _, key, keySize, value, valueSize in
            guard let headers = context?.assumingMemoryBound(to: [String: String].self), let key,
                  let candidates = interestingNamesByLength[keySize] else { return HERALD_MHD_YES }
            let received = UnsafeRawBufferPointer(start: key, count: keySize)
            guard let match = candidates.first(where: { candidate in
                zip(received, candidate.bytes).allSatisfy { (0x41...0x5A).contains($0) ? $0 | 0x20 == $1 : $0 == $1 }
            }), headers.pointee[match.name] == nil else { return HERALD_MHD_YES }
            headers.pointee[match.name] = value.map {
                String(decoding: UnsafeRawBufferPointer(start: $0, count: max(valueSize, 0)), as: UTF8.self)
            } ?? ""
            return HERALD_MHD_YES
        }, pointer)
    }
    return headers
}

private func clientAddress(_ connection: OpaquePointer?) -> String {
    withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer in
        herald_mhd_client_address(connection, buffer.baseAddress!, buffer.count)
        return String(cString: buffer.baseAddress!)
    }
}

private func lookupHeader(_ connection: OpaquePointer?, _ name: StaticString) -> UnsafePointer<CChar>? {
    name.withUTF8Buffer { bytes in
        bytes.withMemoryRebound(to: CChar.self) { MHD_lookup_connection_value(connection, HERALD_MHD_HEADER_KIND, $0.baseAddress) }
    }
}

private func collect(_ connection: OpaquePointer?, _ kind: MHD_ValueKind, lowercaseKeys: Bool) -> [String: String] {
    let collector = ValueCollector(lowercaseKeys: lowercaseKeys)
    let context = Unmanaged.passUnretained(collector).toOpaque()
    withExtendedLifetime(collector) {
        _ = MHD_get_connection_values(connection, kind, { context, _, key, value in
            guard let context, let key else { return HERALD_MHD_YES }
            let collector = Unmanaged<ValueCollector>.fromOpaque(context).takeUnretainedValue()
            let name = String(cString: key)
            collector.values[collector.lowercaseKeys ? name.lowercased() : name] = value.map { String(cString: $0) } ?? ""
            return HERALD_MHD_YES
        }, context)
    }
    return collector.values
}

/// The fields `headRefusal` collects from libmicrohttpd: where each name and value lies relative
/// to the head's first byte.
private struct FieldPositions {
    let base: Int
    var fields: [RequestHead.Field] = []
}

/// Why the request head libmicrohttpd parsed breaks RFC 9112 (`RequestHead`), or nil when it is
/// clean. A request with NUL, CR or LF hidden in a header, a field a front proxy would read
/// differently (whitespace before the colon, obs-fold, a name that is not a token), or ambiguous
/// framing (two Content-Length, Content-Length with Transfer-Encoding, a Transfer-Encoding other than
/// chunked) could let one request hide another (request smuggling), so it is refused.
private func headRefusal(_ connection: OpaquePointer?, method: UnsafePointer<CChar>?, target: UnsafePointer<CChar>?,
                         version: UnsafePointer<CChar>?, state: RequestState) -> RequestHead.Refusal? {
    let size = herald_mhd_header_size(connection)
    guard let method, let target, let version, size > 0 else { return .malformed("the request head was not seen") }
    let base = Int(bitPattern: method)
    var positions = FieldPositions(base: base)
    withUnsafeMutablePointer(to: &positions) { pointer in
        _ = MHD_get_connection_values_n(connection, HERALD_MHD_HEADER_KIND, { context, _, key, keySize, value, valueSize in
            guard let positions = context?.assumingMemoryBound(to: FieldPositions.self) else { return HERALD_MHD_NO }
            let name = Int(bitPattern: key) - positions.pointee.base
            // A field without a value cannot come from a parsed line: place it where no rule holds.
            let value = value.map { Int(bitPattern: $0) - positions.pointee.base } ?? -1
            positions.pointee.fields.append(RequestHead.Field(name: name..<name + keySize, value: value..<value + max(valueSize, 0)))
            return HERALD_MHD_YES
        }, pointer)
    }
    let versionStart = Int(bitPattern: version) - base
    let head = RequestHead(
        bytes: UnsafeRawBufferPointer(start: UnsafeRawPointer(method), count: size), methodLength: strlen(method),
        targetStart: Int(bitPattern: target) - base, targetLength: state.targetLength, targetIsClean: state.targetIsClean,
        version: versionStart..<versionStart + strlen(version), fields: positions.fields)
    return head.refusal()
}

/// libmicrohttpd's URI log callback: sees each request's target as received, before the headers are
/// parsed and before the target is decoded in place, and creates the request's state with what the
/// head check needs of it.
let httpTargetSeen: herald_mhd_target_callback = { _, target, _ in
    let pending = RequestState()
    if let target {
        let length = strlen(target)
        pending.targetLength = length
        pending.targetIsClean = RequestHead.isCleanTarget(UnsafeRawBufferPointer(start: target, count: length))
    }
    return Unmanaged.passRetained(pending).toOpaque()
}

/// libmicrohttpd's access handler: called once when headers arrive, then for each body chunk,
/// then once more (with no data) when the body is complete.
let httpAccessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, version, uploadData, uploadSize, state in
    guard let context, let state, let uploadSize else { return HERALD_MHD_NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    let id = connectionID(connection)
    let pending: RequestState
    if let existing = state.pointee {
        pending = Unmanaged<RequestState>.fromOpaque(existing).takeUnretainedValue()
    } else {
        pending = RequestState()
        state.pointee = Unmanaged.passRetained(pending).toOpaque()
    }
    if !pending.started {
        pending.started = true
        guard server.connections.headersComplete(id) else {
            pending.tooLarge = true
            server.connections.busy(id)
            var refusal = server.refusal(503, "too many connections; please retry")
            refusal.headers.append(("Connection", "close"))
            return reply(connection, refusal)
        }
        if let problem = headRefusal(connection, method: method, target: url, version: version, state: pending) {
            pending.tooLarge = true
            server.connections.busy(id)
            var refusal = server.refusal(problem.status, "malformed request: \(problem.message)")
            refusal.headers.append(("Connection", "close"))
            return reply(connection, refusal)
        }
        pending.limit = server.bodyLimit(method.map { String(cString: $0) } ?? "GET", url.map { String(cString: $0) } ?? "/")
        if let length = lookupHeader(connection, "Content-Length"),
            let declared = Int(String(cString: length)), declared > pending.limit {
            pending.tooLarge = true
            server.connections.busy(id)
            return reply(connection, server.refusal(413, "request body exceeds the limit of \(pending.limit) bytes"))
        }
        return HERALD_MHD_YES
    }
    if uploadSize.pointee > 0 {
        server.connections.received(id, bytes: uploadSize.pointee)
        if !pending.tooLarge, let uploadData {
            if pending.body.count + uploadSize.pointee > pending.limit {
                pending.tooLarge = true
                pending.body = []
            } else {
                uploadData.withMemoryRebound(to: UInt8.self, capacity: uploadSize.pointee) {
                    pending.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: uploadSize.pointee))
                }
            }
        }
        uploadSize.pointee = 0
        return HERALD_MHD_YES
    }
    if let response = pending.response {
        pending.response = nil
        return reply(connection, response)
    }
    server.connections.busy(id)
    if pending.tooLarge {
        return reply(connection, server.refusal(413, "request body exceeds the limit of \(pending.limit) bytes"))
    }
    let request = HTTPRequest(
        method: method.map { String(cString: $0) } ?? "GET",
        path: url.map { String(cString: $0) } ?? "/",
        headers: interestingHeaders(connection),
        query: method.map({ String(cString: $0) }) == "GET" ? collect(connection, HERALD_MHD_GET_ARGUMENT_KIND, lowercaseKeys: false) : [:],
        body: pending.body, clientAddress: clientAddress(connection))
    pending.body = []
    if server.classify(request) == .offload {
        // Count first, then look at `stopping`: `stop` sets the flag before it reads the count, so a
        // request either is counted (and waited for) or sees the flag.
        server.suspended.add(1, ordering: .sequentiallyConsistent)
        if server.stopping.load(ordering: .sequentiallyConsistent) {
            server.suspended.subtract(1, ordering: .sequentiallyConsistent)
            return reply(connection, server.refusal(503, "shutting down, please retry"))
        }
        let suspended = SuspendedConnection(connection: connection, state: pending, server: server)
        MHD_suspend_connection(connection)
        server.offload(request) { suspended.resume(with: $0) }
        return HERALD_MHD_YES
    }
    return reply(connection, server.handler(request))
}

/// Releases the per-request state once libmicrohttpd is done with the request; a kept-alive
/// connection now waits for its next request.
let httpRequestCompleted: MHD_RequestCompletedCallback = { context, connection, state, _ in
    if let context {
        Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue().connections.answered(connectionID(connection))
    }
    guard let state, let existing = state.pointee else { return }
    Unmanaged<RequestState>.fromOpaque(existing).release()
    state.pointee = nil
}

/// Enters each connection in the server's `ConnectionGuard` when it starts, under an id kept as
/// its socket context, and removes it when it closes (before libmicrohttpd closes the socket).
let httpConnectionNotified: MHD_NotifyConnectionCallback = { context, connection, socketContext, code in
    guard let context, let socketContext else { return }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    if code == HERALD_MHD_CONNECTION_STARTED {
        socketContext.pointee = UnsafeMutableRawPointer(bitPattern: server.connections.opened(fd: herald_mhd_connection_fd(connection)))
    } else if let id = socketContext.pointee {
        server.connections.closed(UInt(bitPattern: id))
        socketContext.pointee = nil
    }
}

/// The id `httpConnectionNotified` gave the connection (0, which no entry has, if none).
private func connectionID(_ connection: OpaquePointer?) -> UInt {
    UInt(bitPattern: herald_mhd_socket_context(connection))
}
