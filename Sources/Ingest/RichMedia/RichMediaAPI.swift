import Core

/// Rich media pages of an application, with `Authorization: Token <api_token>`:
/// `PUT /api/v1/apps/<app>/rich-media/<code>` uploads a zip (the body) after checking it
/// (`RichMediaZip`), `GET …/rich-media` lists the pages, `GET …/rich-media/<code>` shows one, and
/// `DELETE …/rich-media/<code>` removes it. A refused upload stores nothing.
struct RichMediaAPI: AppResourceAPI {
    let configuration: Configuration
    let store: any RichMediaStore
    let links: RichMediaLinks
    let clock: any Clock
    let logger: Logger

    static let collection = "rich-media"
    static let listKey = "richMedia"
    static let noun = "rich media"

    /// Whether a request is an upload (which may carry up to `rich_media.max_zip_bytes`).
    static func isUpload(method: String, path: String) -> Bool {
        method == "PUT" && AppResourceRequest.collection(of: path) == collection
    }

    func list(app: String) throws -> [JSON] { try store.pages(app: app).map(json) }

    func show(app: String, code: String) throws -> JSON? { try store.page(app: app, code: code).map(json) }

    /// The zip is parsed and hashed here, before any store work is queued.
    func prepareStore(app: String, code: String, body: [UInt8]) -> Result<@Sendable () throws -> JSON, AppResourceRequest.Refusal> {
        do {
            _ = try RichMediaZip.check(body, maxBytes: configuration.richMedia.maxZipBytes)
        } catch {
            return .failure(AppResourceRequest.Refusal(400, "rich media \(code) refused: \(error.message)"))
        }
        let sha256 = SHA256.hex(body)
        return .success({ [self] in json(try store.putPage(app: app, code: code, zip: body, sha256: sha256, now: clock.now())) })
    }

    func delete(app: String, code: String) throws -> Bool { try store.deletePage(app: app, code: code) }

    func json(_ page: RichMediaPage) -> JSON {
        [
            "code": .string(page.code), "url": links.url(app: page.app, code: page.code).map(JSON.string) ?? .null,
            "sha256": .string(page.sha256), "size": .int(Int64(page.size)), "version": .int(page.version),
            "statistics": ["actions": .int(Int64(page.actions))], "created": .int(page.createdAt), "updated": .int(page.updatedAt),
        ]
    }
}
