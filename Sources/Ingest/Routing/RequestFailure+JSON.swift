import HTTPServer

extension RequestFailure {
    /// The answer of the JSON routes (`/api/v1/…`, rich media downloads): `{"error": …}` with 404
    /// for an unknown application or device, 409 for a request the stored state refuses (such as
    /// deleting a page an in-app shows), 503 when a retry may succeed (the database is unreachable
    /// or busy; the server adds `Retry-After` to every 503) and 500 for Herald's own failures.
    var json: HTTPResponse {
        switch self {
        case .accessDenied: return .json(["error": "access denied"], status: 403)
        case .argument(let message): return .json(["error": .string(message)], status: 409)
        case .unknownApplication: return .json(["error": "application not found"], status: 404)
        case .unknownDevice: return .json(["error": "device not found"], status: 404)
        case .server(status: 503):
            return .json(["error": "the database is unavailable; retry after Retry-After seconds"], status: 503)
        case .server(let status): return .json(["error": "internal error"], status: status)
        }
    }
}
