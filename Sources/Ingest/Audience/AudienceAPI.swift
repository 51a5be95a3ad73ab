import Core
import Foundation
import HTTPServer

/// Pushwoosh's Audience API v2 `bulkSetTags`: `POST /api/v2/audience/bulkSetTags` validates the whole
/// body, stores it as a job and answers `{"request_id", "status": "Pending"}` after the commit; the
/// `BulkTagRunner` applies it in the background; `GET /api/v2/audience/bulkSetTags/<request_id>`
/// reports its progress and per-device errors. Both authenticate with the application's API token
/// (`auth` in the body, or `Authorization: Token <api_token>`).
struct AudienceAPI: Sendable {
    static let path = "/api/v2/audience/bulkSetTags"
    /// Errors listed by the progress reply; `failed` counts all of them.
    static let listedErrors = 1000

    let configuration: Configuration
    let store: any BulkTagStore
    let clock: any Clock
    let logger: Logger
    let onCreated: @Sendable () -> Void

    /// Parses and validates on the calling thread (the bulk parsing queue, see `main.swift`); the
    /// returned work only stores the job.
    func submit(body: [UInt8], authorization: String?) -> @Sendable () -> (HTTPResponse, Int) {
        let request: BulkSetTagsRequest, app: AppConfiguration
        do {
            var holdsNUL = false
            let json = try JSON.parse(body, holdsNUL: &holdsNUL)
            guard case .object(let root) = json else {
                return { (Envelope.failure(400, "the body must be a JSON object"), 400) }
            }
            // Application and token first, so that a foreign caller learns nothing about the body.
            let fields = DeviceRequest(root)
            let code = try fields.application()
            guard let found = configuration.app(code: code) else { throw ArgumentError("application \(code.prefix(64)) not found") }
            guard TokenAuthenticator.accepts(TokenAuthenticator.presented(auth: root["auth"]?.stringValue, authorization: authorization), for: found)
            else { return { (Envelope.failure(403, "access denied: auth does not match the application's api_token"), 403) } }
            app = found
            if holdsNUL, let nul = json.nulCharacter { throw ArgumentError(nul.description) }
            request = try BulkSetTagsRequest(root)
        } catch let error as ArgumentError {
            return { (Envelope.argumentError(error.message), 210) }
        } catch {
            return { (Envelope.failure(400, "malformed JSON: \(error)"), 400) }
        }
        let id = UUID().uuidString.lowercased()
        let devices = JSON.array(request.devices).text
        let total = request.entries.count, createMissing = request.createMissingTags
        return { [store, clock, logger, onCreated] in
            do {
                try store.createBulkTagJob(id: id, app: app.code, createMissingTags: createMissing, devices: devices, total: total, now: clock.now())
            } catch {
                logger.error("bulkSetTags job not stored", ["app": app.code, "error": "\(error)"])
                return (Envelope.failure(500, "internal error, please retry"), 500)
            }
            logger.info("bulkSetTags job stored", ["app": app.code, "job.id": id, "job.devices": String(total)])
            onCreated()
            return (.json(["request_id": .string(id), "status": .string(BulkTagJob.Status.pending.rawValue)]), 0)
        }
    }

    /// `GET /api/v2/audience/bulkSetTags/<request_id>`: an unknown id and a foreign token get the same 404.
    func progress(id: String, authorization: String?) -> HTTPResponse {
        do {
            guard let (job, errors) = try store.bulkTagJob(id: id, errorLimit: Self.listedErrors),
                let app = configuration.app(code: job.app),
                TokenAuthenticator.accepts(TokenAuthenticator.presented(authorization: authorization), for: app)
            else { return .json(["error": "request not found"], status: 404) }
            var reply: [String: JSON] = [
                "request_id": .string(job.id), "application": .string(job.app), "status": .string(job.status.rawValue),
                "total": .int(Int64(job.total)), "processed": .int(Int64(job.processed)),
                "succeeded": .int(Int64(job.processed - job.failed)), "failed": .int(Int64(job.failed)),
                "errors": .array(errors.map { .object(["index": .int(Int64($0.index)), $0.field: .string($0.value), "error": .string($0.message)]) }),
                "created": .string(TagDate.format(job.createdAt)), "updated": .string(TagDate.format(job.updatedAt)),
            ]
            if let failure = job.failure { reply["failure"] = .string(failure) }
            return .json(.object(reply))
        } catch {
            return RequestFailure(error, route: "bulkSetTags progress", logger: logger).json
        }
    }
}
