import Core

/// One HTTP request, fully read (body included) before it reaches a handler.
public struct HTTPRequest: Sendable {
    public var method: String
    /// The path without the query string, e.g. `/json/1.3/registerDevice`.
    public var path: String
    /// Header names are lower-cased; the server fills in those listed in `httpInterestingHeaders`
    /// (Content-Type, Authorization, X-Retry-Count, Accept, Cookie, Origin, Host, X-Forwarded-For,
    /// If-None-Match, Range).
    public var headers: [String: String]
    /// Decoded query arguments.
    public var query: [String: String]
    public var body: [UInt8]
    /// The peer's IP address (a proxy's, when Herald sits behind one).
    public var clientAddress: String

    public init(method: String, path: String, headers: [String: String] = [:], query: [String: String] = [:],
                body: [UInt8] = [], clientAddress: String = "") {
        self.method = method
        self.path = path
        self.headers = headers
        self.query = query
        self.body = body
        self.clientAddress = clientAddress
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

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
