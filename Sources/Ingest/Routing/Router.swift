import BuildInfo
import Core
import HTTPServer

/// Maps each HTTP request to the part of ingest that answers it, and counts the answer. A class, so
/// that the work closures a request captures hold one reference instead of copying every part.
final class Router: Sendable {
    let deviceAPI: DeviceAPI
    let remoteAPI: RemoteAPI
    let audienceAPI: AudienceAPI
    let eventsAPI: EventsAPI
    let richMediaAPI: RichMediaAPI
    let inAppsAPI: InAppsAPI
    let richMediaFiles: RichMediaFiles
    let dashboard: Dashboard
    let oneSignal: OneSignalRoutes
    let settings: HTTPSettings
    let store: any DeviceStore
    let campaigns: any CampaignStore
    let metrics: Metrics
    let workers: Dispatcher
    /// Why database commits fail, while they do.
    let commitFailure: @Sendable () -> String?
    let logger: Logger

    init(deviceAPI: DeviceAPI, remoteAPI: RemoteAPI, audienceAPI: AudienceAPI, eventsAPI: EventsAPI, richMediaAPI: RichMediaAPI,
         inAppsAPI: InAppsAPI, richMediaFiles: RichMediaFiles, dashboard: Dashboard, oneSignal: OneSignalRoutes,
         settings: HTTPSettings, store: any DeviceStore, campaigns: any CampaignStore, metrics: Metrics, workers: Dispatcher,
         commitFailure: @escaping @Sendable () -> String?, logger: Logger) {
        self.deviceAPI = deviceAPI
        self.remoteAPI = remoteAPI
        self.audienceAPI = audienceAPI
        self.eventsAPI = eventsAPI
        self.richMediaAPI = richMediaAPI
        self.inAppsAPI = inAppsAPI
        self.richMediaFiles = richMediaFiles
        self.dashboard = dashboard
        self.oneSignal = oneSignal
        self.settings = settings
        self.store = store
        self.campaigns = campaigns
        self.metrics = metrics
        self.workers = workers
        self.commitFailure = commitFailure
        self.logger = logger
    }

    static let apiPrefix = "/json/1.3/"
    /// A Device or Remote API method as a request's path names it.
    struct APIMethod {
        let name: String
        let isDeviceMethod: Bool
        /// It only reads, and is answered inline on the I/O threads (see `dispatch`).
        let readsInline: Bool
    }

    /// Methods that only read: the Device API's reads and the Remote API's (`RemoteAPI.registry`).
    static let inlineMethods = Set(["getTags", "getInApps", "getInboxMessages", "getConfig", "checkDevice"]).union(RemoteAPI.inlineMethods)
    /// The Device and Remote API methods by their whole path, found with one lookup per request.
    static let apiMethods = NameTable(DeviceAPI.methods.union(RemoteAPI.methods).map { name in
        (apiPrefix + name, APIMethod(name: name, isDeviceMethod: DeviceAPI.methods.contains(name), readsInline: inlineMethods.contains(name)))
    })

    /// Reads run inline (or, when the store's reads wait for a server, on its reader threads);
    /// anything that writes runs on the database writer (see `main.swift`).
    static func dispatch(_ request: HTTPRequest) -> HTTPDispatch {
        if request.method == "GET" || request.method == "HEAD" || request.path.hasPrefix(Dashboard.path) { return .inline }
        if apiMethods[request.path]?.readsInline == true { return .inline }
        return .offload
    }

    /// Answers a request on the calling thread and counts the answer, timed from `started` (when
    /// the request was complete).
    func handle(_ request: HTTPRequest, started: Double = monotonicSeconds()) -> HTTPResponse {
        let (route, work) = route(request)
        let (response, code) = work()
        counted(method: request.method, route: route, response: response, code: code, started: started)
        return response
    }

    /// Counts the answer a client actually got (for a write: after its commit, or the 503 when the
    /// commit failed), timed from `started` (`monotonicSeconds()` when the request was complete),
    /// and logs it at VERBOSE. It takes the request's method, not the request: a write's answer is
    /// counted on the database writer, and the request (its body and headers) is let go of on the
    /// I/O thread that read it, not there.
    func counted(method: String, route: String, response: HTTPResponse, code: Int, started: Double) {
        metrics.count(route: route, status: response.status, code: code, seconds: monotonicSeconds() - started)
        if logger.isEnabled(.verbose) {
            logger.verbose("request", ["http.method": method, "http.route": route, "http.status": String(response.status)])
        }
    }

    /// A valid getTags by hwid, answered through the store's `getTags(app:hwid:answer:)` (on
    /// PostgreSQL, from the thread that read the tags with others, so that no thread waits for
    /// the server): `respond` hears the answer, counted like any other. False, and nothing done, for
    /// any other request, and for a getTags the checks refuse (the caller answers it the usual way).
    func answerWithoutWaiting(_ request: HTTPRequest, started: Double, respond: @escaping @Sendable (HTTPResponse) -> Void) -> Bool {
        guard request.method == "POST", request.path == Self.getTagsPath, case .success(let fields) = requestFields(request.body),
              let (app, hwid) = (try? deviceAPI.tagsDevice(fields, authorization: request.header("authorization"))) ?? nil
        else { return false }
        let method = request.method
        store.getTags(app: app, hwid: hwid) { [self] result in
            let (response, code): (HTTPResponse, Int)
            switch result {
            case .success(let tags): (response, code) = (Envelope.ok(DeviceAPI.tagsReply(tags)), 200)
            case .failure(let error): (response, code) = failure(error, method: "getTags")
            }
            counted(method: method, route: "getTags", response: response, code: code, started: started)
            respond(response)
        }
        return true
    }

    static let getTagsPath = apiPrefix + "getTags"

    typealias Work = @Sendable () -> (HTTPResponse, Int)

    /// The route's name for metrics, and the work that yields the response and the envelope's
    /// `status_code` (0 if none).
    func route(_ request: HTTPRequest) -> (String, Work) {
        let path = request.path
        let apiMethod = Self.apiMethods[path]
        if apiMethod != nil || path.hasPrefix(Self.apiPrefix) {
            let method = apiMethod?.name ?? String(path.dropFirst(Self.apiPrefix.count))
            let route = apiMethod == nil ? "unknown" : method
            guard request.method == "POST" else {
                return (route, { (Envelope.failure(405, "use POST for \(path)").allowing("POST"), 405) })
            }
            guard let apiMethod else { return (route, { (Envelope.failure(404, "unknown method \(method.prefix(64))"), 404) }) }
            return (route, api(method: method, isDeviceMethod: apiMethod.isDeviceMethod, body: request.body,
                               authorization: request.header("authorization")))
        }
        if path == Dashboard.path && (request.method == "GET" || request.method == "POST") || path == Dashboard.logoutPath && request.method == "POST" {
            return ("dashboard", { [dashboard] in (dashboard.handle(request), 0) })
        }
        if path.hasPrefix(RichMediaLinks.pathPrefix) {
            guard request.method == "GET" || request.method == "HEAD" else {
                return ("rich_media_file", { (.json(["error": "use GET"], status: 405).allowing("GET, HEAD"), 405) })
            }
            return ("rich_media_file", { [richMediaFiles] in
                (richMediaFiles.handle(path: path, ifNoneMatch: request.header("if-none-match"), range: request.header("range")), 0)
            })
        }
        switch AppResourceRequest.collection(of: path) {
        case RichMediaAPI.collection?:
            let work = richMediaAPI.route(request)
            return ("api_rich_media", { (work(), 0) })
        case InAppsAPI.collection?:
            let work = inAppsAPI.route(request)
            return ("api_in_apps", { (work(), 0) })
        default: break
        }
        if path.hasPrefix(EventsAPI.prefix), request.method == "GET" {
            return ("api_events", { [eventsAPI] in
                (eventsAPI.handle(path: path, query: request.query, authorization: request.header("authorization")), 0)
            })
        }
        if path == AudienceAPI.path, request.method == "POST" {
            return ("api_bulk_set_tags", audienceAPI.submit(body: request.body, authorization: request.header("authorization")))
        }
        if path.hasPrefix(AudienceAPI.path + "/"), request.method == "GET" {
            return ("api_bulk_set_tags_status", { [audienceAPI] in
                (audienceAPI.progress(id: String(path.dropFirst(AudienceAPI.path.count + 1)), authorization: request.header("authorization")), 0)
            })
        }
        if path.hasPrefix("/api/v1/messages/"), request.method == "GET" {
            return ("api_message", { [remoteAPI] in
                (remoteAPI.funnel(code: String(path.dropFirst("/api/v1/messages/".count)), authorization: request.header("authorization")), 0)
            })
        }
        switch (request.method, path) {
        case ("POST", settings.oneSignalAddDevicePath): return ("onesignal_adddevice", { [oneSignal] in (oneSignal.addDevice(request), 0) })
        case ("POST", settings.oneSignalEditDevicePath): return ("onesignal_editdevice", { [oneSignal] in (oneSignal.editDevice(request), 0) })
        case ("GET", "/healthz"), ("HEAD", "/healthz"): return ("healthz", { [self] in (health(), 0) })
        case (_, settings.oneSignalAddDevicePath), (_, settings.oneSignalEditDevicePath):
            return ("onesignal_method", { (.json(["status": 0, "message": "use POST"], status: 405).allowing("POST"), 0) })
        case ("GET", "/metrics"), ("HEAD", "/metrics"):
            return ("metrics", { [metrics, workers, campaigns] in
                let text = metrics.render(workers: workers.liveWorkers(), queue: try? campaigns.queueDepth(), reports: workers.reportProgress,
                                          housekeeping: workers.housekeepingTotals, dispatching: workers.isDispatching, dispatcher: workers.dispatchingIngest)
                return (.text(text, contentType: "text/plain; version=0.0.4; charset=utf-8"), 0)
            })
        default: return ("not_found", { (Envelope.failure(404, "not found"), 404) })
        }
    }

    /// One `/json/1.3/<method>` call (`isDeviceMethod`: one of `DeviceAPI.methods`, else the Remote
    /// API's): malformed JSON is HTTP 400; argument errors, a NUL character in any string or key of
    /// `request` among them, are 210.
    /// Returns the response and its envelope `status_code`.
    func api(method: String, isDeviceMethod: Bool, body: [UInt8], authorization: String?) -> Work {
        let request: DeviceRequest
        switch requestFields(body) {
        case .success(let fields): request = fields
        case .failure(let refused): return { refused.answer }
        }
        if isDeviceMethod {
            // Validate here, on the I/O thread; only the store work runs on the database writer.
            let work: DeviceAPI.Work
            do {
                work = try deviceAPI.prepare(method: method, request: request, authorization: authorization)
            } catch {
                let answer = failure(error, method: method)
                return { answer }
            }
            return { [self] in
                do {
                    return (Envelope.ok(try work()), 200)
                } catch {
                    return failure(error, method: method)
                }
            }
        }
        return { [self] in call(method: method, request: request, authorization: authorization) }
    }

    /// The answer to a `/json/1.3/<method>` body without a usable `request` object.
    struct Refused: Error {
        let answer: (HTTPResponse, Int)
    }

    /// The `request` object of a `/json/1.3/<method>` body, or the answer to a body without one:
    /// malformed JSON is HTTP 400; a missing `request` object, or a NUL character in any string or key
    /// of it, is 210.
    func requestFields(_ body: [UInt8]) -> Result<DeviceRequest, Refused> {
        let parsed: JSON.ParsedMember
        do {
            parsed = try JSON.parse(body, member: "request")
        } catch {
            return .failure(Refused(answer: (Envelope.failure(400, "malformed JSON: \(error)"), 400)))
        }
        guard parsed.isObject else {
            return .failure(Refused(answer: (Envelope.failure(400, "the body must be a JSON object"), 400)))
        }
        guard let request = parsed.members else {
            return .failure(Refused(answer: (Envelope.argumentError("request is required and must be an object"), 210)))
        }
        if parsed.holdsNUL, let nul = JSON.object(request.dictionary).nulCharacter {
            return .failure(Refused(answer: (Envelope.argumentError(nul.description), 210)))
        }
        let source = parsed.repeatsKey ? nil : parsed.located.map { body[$0] }
        return .success(DeviceRequest(request, source: source))
    }

    func call(method: String, request: DeviceRequest, authorization: String?) -> (HTTPResponse, Int) {
        do {
            return (Envelope.ok(try remoteAPI.handle(method: method, request: request, authorization: authorization)), 200)
        } catch {
            return failure(error, method: method)
        }
    }

    /// The answer for an error thrown by an API call: 403, 210 for client mistakes, 500/503 otherwise.
    func failure(_ error: any Error, method: String) -> (HTTPResponse, Int) {
        switch RequestFailure(error, route: method, logger: logger) {
        case .accessDenied:
            return (Envelope.failure(403, "access denied: auth does not match the application's api_token"), 403)
        case .argument(let message): return (Envelope.argumentError(message), 210)
        case .unknownApplication(let code): return (Envelope.argumentError("application \(code) not found"), 210)
        case .unknownDevice: return (Envelope.argumentError("hwid not found"), 210)
        case .server(let status): return (Envelope.failure(status, "internal error, please retry"), status)
        }
    }

    func health() -> HTTPResponse {
        if let failure = commitFailure() {
            return .json(["status": "degraded", "error": .string("database commits fail: \(failure)"),
                          "dispatching": .bool(workers.isDispatching)], status: 503)
        }
        do {
            try store.ping()
            return .json(["status": "ok", "version": .string(BuildInfo.description), "workers": .int(Int64(workers.liveWorkers().count)),
                          "ingest": .string(workers.election.id),
                          "dispatching": .bool(workers.isDispatching), "dispatcher": workers.dispatchingIngest.map(JSON.string) ?? .null])
        } catch {
            logger.error("health check failed", ["error": "\(error)"])
            return .json(["status": "unavailable", "error": "database unreachable", "dispatching": .bool(workers.isDispatching)], status: 503)
        }
    }
}
