import Core
import HTTPServer

/// A collection of an application's resources under `/api/v1/apps/<app>/<collection>` (rich media
/// pages, in-apps), managed with the application's `Authorization: Token <api_token>`: GET lists
/// the collection; GET, PUT and DELETE on `<collection>/<code>` show, store and delete one. Each
/// API says what its calls do; `route` does the rest the same way for both.
protocol AppResourceAPI: Sendable {
    var configuration: Configuration { get }
    var logger: Logger { get }
    /// The path segment, and the key of the listed array in the answer.
    static var collection: String { get }
    static var listKey: String { get }
    /// How messages and logs name one resource (`rich media`, `in-app`).
    static var noun: String { get }

    func list(app: String) throws -> [JSON]
    func show(app: String, code: String) throws -> JSON?
    /// Checks a PUT body here, on the I/O thread; returns the store work that stores it (and
    /// returns what to answer), or why it was refused (nothing is stored).
    func prepareStore(app: String, code: String, body: [UInt8]) -> Result<@Sendable () throws -> JSON, AppResourceRequest.Refusal>
    func delete(app: String, code: String) throws -> Bool
}

extension AppResourceAPI {
    /// Authenticates and checks the request here and returns the work that answers it.
    func route(_ request: HTTPRequest) -> @Sendable () -> HTTPResponse {
        let resource: AppResourceRequest
        switch AppResourceRequest.authenticate(path: request.path, authorization: request.header("authorization"), configuration: configuration) {
        case .success(let found): resource = found
        case .failure(let refusal): return { refusal.response }
        }
        let app = resource.app.code
        switch (request.method, resource.code) {
        case ("GET", nil), ("HEAD", nil):
            return { [self] in answer { .json([Self.listKey: .array(try list(app: app))]) } }
        case ("GET", let code?), ("HEAD", let code?):
            return { [self] in answer { try show(app: app, code: code).map { .json($0) } ?? Self.notFound(code) } }
        case ("PUT", let code?):
            switch prepareStore(app: app, code: code, body: request.body) {
            case .failure(let refusal): return { refusal.response }
            case .success(let work):
                return { [self] in
                    answer {
                        let stored = try work()
                        logger.info("\(Self.noun) stored", ["app": app, "\(Self.collection).code": code])
                        return .json(stored)
                    }
                }
            }
        case ("DELETE", let code?):
            return { [self] in
                answer {
                    guard try delete(app: app, code: code) else { return Self.notFound(code) }
                    logger.info("\(Self.noun) deleted", ["app": app, "\(Self.collection).code": code])
                    return .json(["deleted": .string(code)])
                }
            }
        default:
            let allowed = resource.code == nil ? "GET, HEAD" : "GET, HEAD, PUT, DELETE"
            return { .json(["error": .string("use GET on /\(Self.collection), and GET, PUT or DELETE on /\(Self.collection)/<code>")], status: 405)
                .allowing(allowed) }
        }
    }

    static func notFound(_ code: String) -> HTTPResponse { AppResourceRequest.Refusal(404, "\(noun) \(code) not found").response }

    /// Runs store work; a failure is answered as on every JSON route (`RequestFailure.json`):
    /// `invalid` (such as a page still in use, or a missing page) is 409, an unavailable database
    /// 503 with `Retry-After`, other failures 500 (logged).
    func answer(_ work: () throws -> HTTPResponse) -> HTTPResponse {
        do {
            return try work()
        } catch {
            return RequestFailure(error, route: Self.collection, logger: logger).json
        }
    }
}
