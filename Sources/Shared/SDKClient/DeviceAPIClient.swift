import Core
import Foundation

/// Talks to Herald's public HTTP API as an app does: the Pushwoosh SDKs' `POST /json/1.3/<method>`
/// with `{"request": …}`, and the OneSignal helper's form-encoded routes. Keeps its connection
/// alive; use one instance per thread.
public final class DeviceAPIClient {
    public let http: HTTPClient

    /// `tls` makes it speak HTTPS (see `HTTPClient`).
    public init(host: String = "127.0.0.1", port: UInt16, tls: TLSClientContext? = nil) {
        http = HTTPClient(host: host, port: port, tls: tls)
    }

    /// `POST /json/1.3/<method>` with `{"request": request}` and the headers the SDKs send; returns
    /// the HTTP status and the parsed body.
    public func call(_ method: String, _ request: JSON) throws -> (status: Int, body: JSON) {
        let response = try http.request("POST", "/json/1.3/\(method)", body: JSON.object(["request": request]).encoded(),
                                        headers: [("Content-Type", "application/json; charset=utf-8"), ("Authorization", "Token (null)")])
        return (response.status, try JSON.parse(response.body))
    }

    /// A call that must succeed (HTTP 200 and `status_code` 200); returns `response`.
    @discardableResult
    public func ok(_ method: String, _ request: JSON) throws -> JSON {
        let (status, body) = try call(method, request)
        guard status == 200, body["status_code"] == .int(200) else {
            throw HTTPClient.Failure(description: "\(method) failed: HTTP \(status) \(body.text)")
        }
        return body["response"] ?? .null
    }

    /// POSTs form fields to a OneSignal helper route, percent-encoded as the helper does; returns the
    /// HTTP status and the parsed body.
    public func oneSignal(_ path: String, _ fields: [(String, String)]) throws -> (status: Int, body: JSON) {
        let response = try http.request("POST", path, body: Array(Self.formEncoded(fields).utf8),
                                        headers: [("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")])
        return (response.status, try JSON.parse(response.body))
    }

    /// `application/x-www-form-urlencoded`: unreserved characters as they are, everything else `%XX`.
    public static func formEncoded(_ fields: [(String, String)]) -> String {
        let allowed = CharacterSet.alphanumerics.union(CharacterSet(charactersIn: "-._~"))
        return fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }.joined(separator: "&")
    }
}
