import Core
import HTTPServer

/// Rich media pages of an application, with `Authorization: Token <api_token>`:
/// `PUT /api/v1/apps/<app>/rich-media/<code>` uploads a zip (the body) after checking it
/// (`RichMediaZip`), `GET …/rich-media` lists the pages, `GET …/rich-media/<code>` shows one, and
/// `DELETE …/rich-media/<code>` removes it. A refused upload stores nothing.
struct RichMediaAPI: Sendable {
    let configuration: Configuration
    let store: any RichMediaStore
    let links: RichMediaLinks
    let clock: any Clock
    let logger: Logger

    static let collection = "rich-media"

    /// Whether a request is an upload (which may carry up to `rich_media.max_zip_bytes`).
    static func isUpload(method: String, path: String) -> Bool {
        method == "PUT" && AppResourceRequest.collection(of: path) == collection
    }

    /// Checks the request here (on the I/O thread: the zip is parsed and hashed before any store
    /// work is queued) and returns the work that answers it.
    func route(_ request: HTTPRequest) -> @Sendable () -> HTTPResponse {
        let resource: AppResourceRequest
        switch AppResourceRequest.authenticate(path: request.path, authorization: request.header("authorization"), configuration: configuration) {
        case .success(let found): resource = found
        case .failure(let refusal): return { refusal.response }
        }
        let app = resource.app.code
        switch (request.method, resource.code) {
        case ("GET", nil), ("HEAD", nil):
            return { [self] in answer { .json(["richMedia": .array(try store.pages(app: app).map(json))]) } }
        case ("GET", let code?), ("HEAD", let code?):
            return { [self] in
                answer {
                    guard let page = try store.page(app: app, code: code) else { return AppResourceRequest.Refusal(404, "rich media \(code) not found").response }
                    return .json(json(page))
                }
            }
        case ("PUT", let code?):
            let body = request.body
            do {
                _ = try RichMediaZip.check(body, maxBytes: configuration.richMedia.maxZipBytes)
            } catch {
                return { .json(["error": .string("rich media \(code) refused: \(error.message)")], status: 400) }
            }
            let sha256 = SHA256.hex(body)
            return { [self] in
                answer {
                    let page = try store.putPage(app: app, code: code, zip: body, sha256: sha256, now: clock.now())
                    logger.info("rich media stored", ["app": app, "rich_media.code": code, "rich_media.version": String(page.version)])
                    return .json(json(page))
                }
            }
        case ("DELETE", let code?):
            return { [self] in
                answer {
                    guard try store.deletePage(app: app, code: code) else { return AppResourceRequest.Refusal(404, "rich media \(code) not found").response }
                    logger.info("rich media deleted", ["app": app, "rich_media.code": code])
                    return .json(["deleted": .string(code)])
                }
            }
        default:
            return { .json(["error": "use GET on /rich-media, and GET, PUT or DELETE on /rich-media/<code>"], status: 405) }
        }
    }

    func answer(_ work: () throws -> HTTPResponse) -> HTTPResponse { AppResourceRequest.answer(logger: logger, work) }

    func json(_ page: RichMediaPage) -> JSON {
        [
            "code": .string(page.code), "url": links.url(app: page.app, code: page.code).map(JSON.string) ?? .null,
            "sha256": .string(page.sha256), "size": .int(Int64(page.size)), "version": .int(page.version),
            "statistics": ["actions": .int(Int64(page.actions))], "created": .int(page.createdAt), "updated": .int(page.updatedAt),
        ]
    }
}
