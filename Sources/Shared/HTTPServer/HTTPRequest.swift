import Core

/// One HTTP request, fully read (body included) before it reaches a handler.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The path without the query string, e.g. `/json/1.3/registerDevice`.
    public var path: String
    /// The server fills in those listed in `httpInterestingHeaders` (Content-Type, Authorization,
    /// X-Retry-Count, Accept, Cookie, Origin, Host, X-Forwarded-For, If-None-Match, Range).
    public var headers: HTTPHeaders
    /// Decoded query arguments.
    public var query: [String: String]
    public var body: [UInt8]
    /// The peer's IP address (a proxy's, when Herald sits behind one).
    public var clientAddress: String

    public init(method: String, path: String, headers: HTTPHeaders = [:], query: [String: String] = [:],
                body: [UInt8] = [], clientAddress: String = "") {
        self.method = method
        self.path = path
        self.headers = headers
        self.query = query
        self.body = body
        self.clientAddress = clientAddress
    }

    public func header(_ name: String) -> String? { headers[name] }
}

/// Request header fields by lower-cased name, the first of a repeated name, in the order sent. A
/// request keeps a few (`httpInterestingHeaders`), so a name is found by comparing it with each:
/// no hashing, and no table to build for every request.
public struct HTTPHeaders: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public internal(set) var fields: [(name: String, value: String)] = []

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name.lowercased(), value) }
    }

    /// Room for `capacity` fields.
    init(capacity: Int) { fields.reserveCapacity(capacity) }

    /// The value of the field `name`, in any case.
    public subscript(name: String) -> String? {
        if let field = fields.first(where: { $0.name == name }) { return field.value }
        let lowercased = name.lowercased()
        guard lowercased != name else { return nil }
        return fields.first { $0.name == lowercased }?.value
    }

    public var isEmpty: Bool { fields.isEmpty }

    public var dictionary: [String: String] {
        Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
    }

    /// Adds the field `name` (lower-cased) unless one of that name is there.
    private mutating func add(_ name: String, _ value: String) {
        guard !fields.contains(where: { $0.name == name }) else { return }
        fields.append((name, value))
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool { lhs.dictionary == rhs.dictionary }
}

/// The request headers handlers use, lower-cased. The server keeps only these, the first of a
/// repeated name.
let httpInterestingHeaders: [String] = [
    "content-type", "authorization", "x-retry-count", "accept", "cookie", "origin", "host", "x-forwarded-for", "if-none-match", "range",
]

/// A complete HTTP response.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: [(String, String)]
    public var body: [UInt8]

    public init(status: Int, headers: [(String, String)] = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response with `Content-Type: application/json; charset=utf-8`.
    public static func json(_ value: JSON, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", "application/json; charset=utf-8")], body: value.encoded())
    }

    /// This response with an `Allow` header naming `methods` (what a 405 must carry).
    public func allowing(_ methods: String) -> HTTPResponse {
        var response = self
        response.headers.append(("Allow", methods))
        return response
    }

    /// A plain-text response.
    public static func text(_ value: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: [("Content-Type", contentType)], body: Array(value.utf8))
    }
}

extension HTTPResponse {
    /// What a response says of its connection.
    enum ConnectionHeader {
        case none
        /// The connection closes after it.
        case close
        /// An HTTP/1.0 connection stays open.
        case keepAlive
    }

    /// The response as sent: status line, the headers, `Content-Length` (the body's, even when
    /// `omitBody` leaves it out, as a HEAD request's answer must), `Date`, `Connection` as
    /// `connection` says, `Retry-After: 1` on a 503 that names no time, then the body.
    func wire(omitBody: Bool, connection: ConnectionHeader) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(160 + (omitBody ? 0 : body.count))
        if status == 200 {
            bytes.appendUTF8("HTTP/1.1 200 OK\r\n")
        } else {
            bytes.appendUTF8("HTTP/1.1 ")
            bytes.appendDecimal(Int64(status))
            bytes.append(UInt8(ascii: " "))
            bytes.appendUTF8(Self.reason(status))
            bytes.appendUTF8("\r\n")
        }
        var retryAfter = false
        for (name, value) in headers {
            bytes.appendUTF8(name)
            bytes.appendUTF8(": ")
            bytes.appendUTF8(value)
            bytes.appendUTF8("\r\n")
            if status == 503, !retryAfter { retryAfter = name.lowercased() == "retry-after" }
        }
        if status == 503, !retryAfter { bytes.appendUTF8("Retry-After: 1\r\n") }
        switch connection {
        case .none: break
        case .close: bytes.appendUTF8("Connection: close\r\n")
        case .keepAlive: bytes.appendUTF8("Connection: keep-alive\r\n")
        }
        if status != 204 && status != 304 && status >= 200 {
            bytes.appendUTF8("Content-Length: ")
            bytes.appendDecimal(Int64(body.count))
            bytes.appendUTF8("\r\n")
        }
        HTTPDate.shared.append(to: &bytes)
        bytes.appendUTF8("\r\n")
        if !omitBody { body.withUnsafeBufferPointer { bytes.append(contentsOf: $0) } }
        return bytes
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 410: "Gone"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 415: "Unsupported Media Type"
        case 416: "Range Not Satisfiable"
        case 422: "Unprocessable Content"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "Status"
        }
    }
}
