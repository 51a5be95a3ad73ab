import Core
import Foundation

/// Checks an application's API token, for every caller that needs it: the Remote API (`auth` in
/// the body or `Authorization: Token …`), the statistics endpoints and the dashboard's sign-in.
enum TokenAuthenticator {
    /// The token presented: `auth` (the Remote API's body field) when set, else the
    /// `Authorization: Token …` header.
    static func presented(auth: String? = nil, authorization: String?) -> String? {
        if let auth, !auth.isEmpty { return auth }
        guard let header = authorization, header.hasPrefix("Token ") else { return nil }
        let token = String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    /// Whether `token` is the API token of some application: what a Remote API call must present
    /// before any of its fields is looked at, so that a caller without one learns nothing of them.
    static func isKnown(_ token: String?, in configuration: Configuration) -> Bool {
        configuration.apps.contains { accepts(token, for: $0) }
    }

    /// Whether `token` is `app`'s API token. Compares in constant time, so that response timing
    /// does not reveal the token.
    static func accepts(_ token: String?, for app: AppConfiguration) -> Bool {
        guard let token else { return false }
        let a = Array(token.utf8), b = Array(app.apiToken.utf8)
        var difference = a.count ^ b.count
        for index in 0..<max(a.count, b.count) {
            difference |= Int((index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0))
        }
        return difference == 0
    }
}
