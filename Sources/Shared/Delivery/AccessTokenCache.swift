import Foundation
import Core
import HTTP2

/// An OAuth 2.0 access token shared by every shard of a worker: fetched when there is none, when it
/// is within five minutes of its expiry, or when the provider refused it; callers asking at once
/// share one fetch.
final class AccessTokenCache: Sendable {
    private let cached = Lock<(token: String, validUntil: Int64)?>(nil)
    /// Held while a token is fetched.
    private let fetching = NSLock()

    /// A valid token; `refused` (a token the provider refused) is replaced by a fresh one. `fetch`
    /// runs only when a new token is needed and gives it with its lifetime in seconds.
    func token(now: Int64, replacing refused: String?,
               fetch: () throws(DeliveryError) -> (token: String, lifetime: Int64)) throws(DeliveryError) -> String {
        if let current = cached.withLock({ $0 }), current.validUntil > now, current.token != refused { return current.token }
        fetching.lock()
        defer { fetching.unlock() }
        // Another caller may have fetched one while this one waited.
        if let current = cached.withLock({ $0 }), current.validUntil > now, current.token != refused { return current.token }
        let fresh = try fetch()
        cached.withLock { $0 = (fresh.token, now + max(60, fresh.lifetime - 300)) }
        return fresh.token
    }

    /// Posts the form `body` to an OAuth 2.0 token endpoint and reads `access_token` and `expires_in`
    /// (3600 when absent). A failure names `what` was refused; it is transient when the endpoint
    /// could not be reached or answered 429 or 5xx.
    static func exchange(url: String, form body: String, client: any HTTP2Transport,
                         what: String) throws(DeliveryError) -> (token: String, lifetime: Int64) {
        let response = client.send([HTTP2Request(url: url, headers: ["content-type: application/x-www-form-urlencoded"],
                                                 body: Array(body.utf8))])[0]
        guard response.status == 200, let json = try? JSON.parse(response.body), let token = json["access_token"]?.stringValue else {
            let detail = (try? JSON.parse(response.body))?["error_description"]?.stringValue ?? response.transportError ?? "HTTP \(response.status)"
            let transient = response.status == 0 || response.status == 429 || response.status >= 500
            throw DeliveryError(message: transient ? "the token endpoint could not be reached (\(detail))"
                                    : "the token endpoint refused the \(what) (\(detail))", errno: 0, transient: transient)
        }
        return (token, json["expires_in"]?.lenientInt ?? 3600)
    }

    /// `text` percent-encoded for an `application/x-www-form-urlencoded` body.
    static func formEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
