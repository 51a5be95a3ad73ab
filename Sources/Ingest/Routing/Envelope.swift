import Core
import HTTPServer

/// The Pushwoosh reply envelope: `{"status_code", "status_message", "response"}`. The SDKs treat a
/// call as successful only on HTTP 200 with `status_code` 200.
public enum Envelope {
    /// Success, with `response` (null for void methods).
    public static func ok(_ response: JSON = .null) -> HTTPResponse {
        guard response != .null else { return okWithoutResponse }
        // The members in the order `JSON.encoded` sorts them, around the response written once.
        var body: [UInt8] = []
        body.reserveCapacity(128)
        body.append(contentsOf: #"{"response":"#.utf8)
        response.write(to: &body)
        body.append(contentsOf: #","status_code":200,"status_message":"OK"}"#.utf8)
        return HTTPResponse(status: 200, headers: okWithoutResponse.headers, body: body)
    }

    /// Most writes answer this: encoded once.
    static let okWithoutResponse = HTTPResponse.json(["status_code": 200, "status_message": "OK", "response": nil])

    /// An argument error: HTTP 200 with `status_code` 210, so that the SDKs do not retry;
    /// `message` names the field.
    public static func argumentError(_ message: String) -> HTTPResponse {
        .json(["status_code": 210, "status_message": .string(message), "response": nil])
    }

    /// Any other status, with the same code at the HTTP and envelope level.
    public static func failure(_ status: Int, _ message: String) -> HTTPResponse {
        HTTPResponse.json(["status_code": .int(Int64(status)), "status_message": .string(message), "response": nil], status: status)
    }

    /// What the HTTP server answers by itself, before a route is chosen (413, 503 while stopping): the
    /// Pushwoosh envelope and the OneSignal helper's `{status, message}` in one body, so that either
    /// client reads it.
    static func refusal(_ status: Int, _ message: String) -> HTTPResponse {
        HTTPResponse.json(["status_code": .int(Int64(status)), "status_message": .string(message), "response": nil, "status": 0,
                           "message": .string(message)], status: status)
    }
}
