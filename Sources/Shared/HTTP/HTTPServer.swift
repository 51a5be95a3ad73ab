internal import CMicroHTTPD
#if canImport(Glibc)
import Glibc
#endif

/// Why the HTTP server could not start.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public let errno: Int32
    public var description: String { "\(message) (errno \(errno): \(String(cString: strerror(errno))))" }
}

/// An HTTP/1.1 server (libmicrohttpd, keep-alive, an internal epoll thread pool). Bodies larger than
/// `maxBodyBytes` are answered 413 without reaching the handler. The handler runs on the server's own
/// threads, one request at a time per thread, and must not block for long.
///
/// `@unchecked Sendable` invariant: the daemon pointer is written only by `start`/`stop`, which the
/// owner calls from one thread, and the handler is an immutable `@Sendable` closure.
public final class HTTPServer: @unchecked Sendable {
    public typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    let settings: HTTPSettings
    let handler: Handler
    private var daemon: OpaquePointer?

    public init(settings: HTTPSettings, handler: @escaping Handler) {
        self.settings = settings
        self.handler = handler
    }

    /// The port the server listens on (differs from the configured one when that was 0).
    public private(set) var port: UInt16 = 0

    public func start() throws(HTTPServerError) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        guard let started = herald_mhd_start(
            settings.host, settings.port, UInt32(settings.threads), UInt32(settings.connectionLimit),
            UInt32(settings.idleTimeoutSeconds), httpAccessHandler, context, httpRequestCompleted, nil)
        else {
            throw HTTPServerError(message: "cannot listen on \(settings.listen)", errno: Glibc.errno)
        }
        daemon = started
        port = herald_mhd_bound_port(started)
    }

    /// Stops accepting connections and waits for the server's threads to finish.
    public func stop() {
        guard let daemon else { return }
        MHD_stop_daemon(daemon)
        self.daemon = nil
    }

    deinit { stop() }
}

/// Body bytes collected for one request while libmicrohttpd feeds them in.
final class PendingRequest {
    var body: [UInt8] = []
    var tooLarge = false
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
    let result = MHD_queue_response(connection, UInt32(response.status), handle)
    MHD_destroy_response(handle)
    return result
}

private final class ValueCollector {
    var values: [String: String] = [:]
    let lowercaseKeys: Bool
    init(lowercaseKeys: Bool) { self.lowercaseKeys = lowercaseKeys }
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

/// libmicrohttpd's access handler: called once when headers arrive, then for each body chunk,
/// then once more (with no data) when the body is complete.
let httpAccessHandler: MHD_AccessHandlerCallback = { context, connection, url, method, _, uploadData, uploadSize, state in
    guard let context, let state, let uploadSize else { return HERALD_MHD_NO }
    let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
    guard let existing = state.pointee else {
        let pending = PendingRequest()
        state.pointee = Unmanaged.passRetained(pending).toOpaque()
        if let length = MHD_lookup_connection_value(connection, HERALD_MHD_HEADER_KIND, "Content-Length"),
            let declared = Int(String(cString: length)), declared > server.settings.maxBodyBytes {
            pending.tooLarge = true
            return reply(connection, tooLargeResponse(server.settings.maxBodyBytes))
        }
        return HERALD_MHD_YES
    }
    let pending = Unmanaged<PendingRequest>.fromOpaque(existing).takeUnretainedValue()
    if uploadSize.pointee > 0 {
        if !pending.tooLarge, let uploadData {
            if pending.body.count + uploadSize.pointee > server.settings.maxBodyBytes {
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
    if pending.tooLarge {
        return reply(connection, tooLargeResponse(server.settings.maxBodyBytes))
    }
    let request = HTTPRequest(
        method: method.map { String(cString: $0) } ?? "GET",
        path: url.map { String(cString: $0) } ?? "/",
        headers: collect(connection, HERALD_MHD_HEADER_KIND, lowercaseKeys: true),
        query: collect(connection, HERALD_MHD_GET_ARGUMENT_KIND, lowercaseKeys: false),
        body: pending.body)
    pending.body = []
    return reply(connection, server.handler(request))
}

func tooLargeResponse(_ limit: Int) -> HTTPResponse {
    .json(["status_code": 413, "status_message": .string("request body exceeds the limit of \(limit) bytes"), "response": nil],
          status: 413)
}

/// Releases the per-request state once libmicrohttpd is done with the request.
let httpRequestCompleted: MHD_RequestCompletedCallback = { _, _, state, _ in
    guard let state, let existing = state.pointee else { return }
    Unmanaged<PendingRequest>.fromOpaque(existing).release()
    state.pointee = nil
}
