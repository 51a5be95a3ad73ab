import Core
import HTTPServer

/// A call on `/api/v1/apps/<app>/<collection>[/<code>]` (rich media pages, in-apps) whose
/// `Authorization: Token <api_token>` matches the application. Anything else is the answer to send.
struct AppResourceRequest {
    let app: AppConfiguration
    /// The code after the collection, or nil for the collection itself.
    let code: String?

    static let prefix = "/api/v1/apps/"

    /// The collection a path names (`rich-media`, `in-apps`), or nil for other paths.
    static func collection(of path: String) -> String? {
        guard path.hasPrefix(prefix) else { return nil }
        let parts = path.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3 else { return nil }
        return String(parts[1])
    }

    /// The request, or the 403/404 to answer.
    static func authenticate(path: String, authorization: String?, configuration: Configuration) -> Result<AppResourceRequest, Refusal> {
        let parts = path.dropFirst(prefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard let app = configuration.app(code: String(parts[0])) else { return .failure(Refusal(404, "application not found")) }
        guard TokenAuthenticator.accepts(TokenAuthenticator.presented(authorization: authorization), for: app) else {
            return .failure(Refusal(403, "access denied: send Authorization: Token <api_token> of this application"))
        }
        guard parts.count == 3 else { return .success(AppResourceRequest(app: app, code: nil)) }
        let code = String(parts[2])
        guard RichMediaLinks.isValidCode(code) else { return .failure(Refusal(404, "not found: codes are \(RichMediaLinks.codeRule)")) }
        return .success(AppResourceRequest(app: app, code: code))
    }

    /// An error answer: `{"error": message}` with an HTTP status.
    struct Refusal: Error {
        let status: Int
        let message: String
        init(_ status: Int, _ message: String) {
            self.status = status
            self.message = message
        }

        var response: HTTPResponse { .json(["error": .string(message)], status: status) }
    }
}
