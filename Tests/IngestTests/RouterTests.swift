import Foundation
import Testing
@testable import Ingest
import Core
import HTTPServer
import Storage
import Synchronization
import TestSupport

/// The router of ingest's `/json/1.3/<method>` calls over a real SQLite file: which calls run
/// inline, what a client gets for a wrong verb, an unknown method, a body that is not the
/// envelope or a field it got wrong (and that such a call stores nothing), and what a good Device
/// API or Remote API call answers and stores; `/metrics` counts each answer by route.
@Suite struct RouterTests {
    /// Ingest's router over a fresh database with two applications, answering as `herald-ingest`
    /// does: reads inline, writes through the backend's group commit.
    struct Rig {
        static let (shop, news) = ("APP-1", "APP-2")
        let folder: TemporaryDirectory
        let backend: any StoreBackend
        let router: Router

        init() throws {
            folder = try TemporaryDirectory()
            var configuration = Configuration()
            configuration.database = DatabaseSettings(path: folder.file("herald.sqlite"))
            configuration.apps = [AppConfiguration(code: Self.shop, name: "Shop", apiToken: "shop-secret", sink: folder.file("shop.jsonl")),
                                  AppConfiguration(code: Self.news, name: "News", apiToken: "news-secret", sink: folder.file("news.jsonl"))]
            backend = try Storage.open(configuration)
            let clock = ManualClock(1_800_000_000)
            let logger = Logger(label: "test", level: .none)
            let workers = Dispatcher(id: "ingest-1", settings: configuration.queue, retention: configuration.retention, campaigns: backend.campaigns,
                                     bulkTags: backend.devices, analytics: backend.analytics, clock: clock, logger: logger)
            router = Router(configuration: configuration, backend: backend,
                            applicationServerKeys: try ApplicationServerKeys(apps: configuration.apps), clock: clock, workers: workers,
                            metrics: Metrics(storeMemory: { 0 }, usesPostgres: false), logger: logger,
                            onMessageCreated: {}, onBulkJobCreated: {})
        }

        /// The response to `method path` with `body`, handled as `herald-ingest` handles it.
        func answer(_ method: String, _ path: String, body: String = "", headers: HTTPHeaders = [:]) -> HTTPResponse {
            let request = HTTPRequest(method: method, path: path, headers: headers, body: Array(body.utf8))
            let started = monotonicSeconds()
            if case .inline = Router.dispatch(request) { return router.handle(request) }
            let (route, work) = router.route(request)
            let answered = Mutex<HTTPResponse?>(nil)
            let done = DispatchSemaphore(value: 0)
            backend.submitRequest(work, onFailure: { (Envelope.failure(503, "the database could not commit; please retry"), 503) }) {
                [router] response, code in
                router.counted(method: method, route: route, response: response, code: code, started: started)
                answered.withLock { $0 = response }
                done.signal()
            }
            done.wait()
            return answered.withLock { $0! }
        }

        /// `POST /json/1.3/<method>` with `{"request": request}`; the HTTP status and the envelope.
        func call(_ method: String, _ request: JSON, token: String? = nil) throws -> (status: Int, envelope: JSON) {
            let response = answer("POST", "/json/1.3/\(method)", body: (["request": request] as JSON).text,
                                  headers: token.map { ["authorization": "Token \($0)"] } ?? [:])
            return (response.status, try JSON.parse(response.body))
        }

        /// The `status_message` of an envelope.
        func message(_ reply: (status: Int, envelope: JSON)) -> String? { reply.envelope["status_message"]?.stringValue }

        func metrics() -> String { String(decoding: answer("GET", "/metrics").body, as: UTF8.self) }
    }

    @Test func readsAreAnsweredInlineAndWritesGoToTheDatabaseWriter() {
        func dispatch(_ method: String, _ path: String) -> String {
            if case .inline = Router.dispatch(HTTPRequest(method: method, path: path)) { return "inline" }
            return "offload"
        }
        for read in ["getTags", "getInApps", "getInboxMessages", "getConfig", "checkDevice", "getMessageDetails", "getMsgStats", "listTags"]
            + Router.inlineMethods.sorted() {
            #expect(dispatch("POST", "/json/1.3/\(read)") == "inline", "\(read)")
        }
        for write in ["registerDevice", "setTags", "applicationOpen", "createMessage", "createTargetedMessage", "deleteMessage", "addTag", "nonsense"] {
            #expect(dispatch("POST", "/json/1.3/\(write)") == "offload", "\(write)")
        }
        #expect(dispatch("GET", "/api/v1/messages/ABC") == "inline" && dispatch("POST", "/api/v1/bulkSetTags") == "offload")
    }

    @Test func aWrongVerbAnUnknownMethodOrABodyThatIsNotTheEnvelopeIsRefused() throws {
        let rig = try Rig()
        let get = rig.answer("GET", "/json/1.3/registerDevice")
        #expect(get.status == 405 && get.headers.contains { $0.0.lowercased() == "allow" && $0.1 == "POST" })
        #expect(try JSON.parse(get.body)["status_message"] == "use POST for /json/1.3/registerDevice")

        let unknown = try rig.call("sendSMS", ["application": .string(Rig.shop)])
        #expect(unknown.status == 404 && rig.message(unknown) == "unknown method sendSMS")

        let malformed = rig.answer("POST", "/json/1.3/registerDevice", body: #"{"request": {"hwid": "#)
        let malformedMessage = try JSON.parse(malformed.body)["status_message"]?.stringValue
        #expect(malformed.status == 400 && malformedMessage?.hasPrefix("malformed JSON") == true, "\(malformedMessage ?? "")")
        let notAnObject = rig.answer("POST", "/json/1.3/registerDevice", body: "[1]")
        #expect(try notAnObject.status == 400 && JSON.parse(notAnObject.body)["status_message"] == "the body must be a JSON object")

        let noRequest = rig.answer("POST", "/json/1.3/registerDevice", body: #"{"hwid": "h1"}"#)
        #expect(noRequest.status == 200)
        #expect(try JSON.parse(noRequest.body) == ["status_code": 210, "status_message": "request is required and must be an object", "response": nil])
        let nul = try rig.call("registerDevice", ["application": .string(Rig.shop), "hwid": "h\u{0}1", "device_type": 1, "push_token": "t"])
        #expect(nul.status == 200 && nul.envelope["status_code"] == 210 && rig.message(nul)?.contains("hwid") == true, "\(nul.envelope.text)")
        #expect(try rig.backend.devices.device(app: Rig.shop, hwid: "h\u{0}1") == nil)

        let metrics = rig.metrics()
        #expect(metrics.contains(#"herald_http_requests_total{route="registerDevice",status="405",code="405"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"herald_http_requests_total{route="unknown",status="404",code="404"} 1"#))
        #expect(metrics.contains(#"herald_http_requests_total{route="registerDevice",status="200",code="210"} 2"#))
    }

    /// Each thread counts its answers apart (`Metrics` keeps them in stripes); /metrics adds them
    /// all up, counts and durations alike.
    @Test func answersCountedOnManyThreadsAddUp() throws {
        let rig = try Rig()
        let threads = 6, each = 50
        let done = DispatchSemaphore(value: 0)
        let router = rig.router
        for _ in 0..<threads {
            Thread {
                for _ in 0..<each { _ = router.handle(HTTPRequest(method: "GET", path: "/nowhere")) }
                done.signal()
            }.start()
        }
        for _ in 0..<threads { done.wait() }
        let metrics = rig.metrics()
        #expect(metrics.contains(#"herald_http_requests_total{route="not_found",status="404",code="404"} 300"#), "\(metrics)")
        #expect(metrics.contains(#"herald_http_request_duration_seconds_count{route="not_found",status_class="4xx"} 300"#))
        #expect(metrics.contains(#"herald_http_request_duration_seconds_bucket{route="not_found",status_class="4xx",le="+Inf"} 300"#))
    }

    @Test func aDeviceAPICallStoresWhatItWasGivenAndAWrongFieldIs210NamingIt() throws {
        let rig = try Rig()
        let missing = try rig.call("registerDevice", ["application": .string(Rig.shop), "device_type": 1, "push_token": "t"])
        #expect(missing.status == 200 && missing.envelope["status_code"] == 210 && rig.message(missing)?.contains("hwid") == true,
                "\(missing.envelope.text)")
        let unknownApp = try rig.call("registerDevice", ["application": "NOPE-1", "hwid": "h1", "device_type": 1, "push_token": "t"])
        #expect(unknownApp.envelope["status_code"] == 210 && rig.message(unknownApp) == "application NOPE-1 not found")
        #expect(try rig.backend.devices.device(app: Rig.shop, hwid: "h1") == nil)

        let registered = try rig.call("registerDevice", ["application": .string(Rig.shop), "hwid": "h1", "device_type": 1, "push_token": "t1"])
        #expect(registered.status == 200 && registered.envelope["status_code"] == 200, "\(registered.envelope.text)")
        let tagged = try rig.call("setTags", ["application": .string(Rig.shop), "hwid": "h1", "tags": ["City": "Oslo"]])
        #expect(tagged.envelope["status_code"] == 200, "\(tagged.envelope.text)")
        let tags = try rig.call("getTags", ["application": .string(Rig.shop), "hwid": "h1"])
        #expect(tags.envelope["response"]?["result"]?["City"] == "Oslo", "\(tags.envelope.text)")
    }

    @Test func createMessageNeedsItsAppsTokenAndAWrongNotificationCreatesNothing() throws {
        let rig = try Rig()
        let notification: JSON = ["send_date": "now", "content": "Sale"]
        let request: JSON = ["application": .string(Rig.shop), "notifications": [notification]]
        for token in [nil, "news-secret", "guess"] {
            let denied = try rig.call("createMessage", request, token: token)
            #expect(denied.status == 403 && rig.message(denied) == "access denied: auth does not match the application's api_token",
                    "\(token ?? "no token")")
        }
        let wrong = try rig.call("createMessage", ["application": .string(Rig.shop), "notifications": [notification, ["send_rate": 0, "content": "x"]]],
                                 token: "shop-secret")
        #expect(wrong.status == 200 && rig.message(wrong) == "notifications[1].send_rate: must be at least 1 push per second")
        #expect(try rig.backend.campaigns.messageCount(app: Rig.shop) == 0)

        let created = try rig.call("createMessage", request, token: "shop-secret")
        let code = try #require(created.envelope["response"]?["Messages"]?.arrayValue?.first?.stringValue, "\(created.envelope.text)")
        let funnel = rig.answer("GET", "/api/v1/messages/\(code)", headers: ["authorization": "Token shop-secret"])
        #expect(try funnel.status == 200 && JSON.parse(funnel.body)["status"] == "queued")
        #expect(rig.answer("GET", "/api/v1/messages/\(code)", headers: ["authorization": "Token news-secret"]).status == 404)
    }

    @Test func createTargetedMessageTakesItsAudienceFromDevicesFilterAlone() throws {
        let rig = try Rig()
        func targeted(_ fields: [String: JSON], token: String = "shop-secret") throws -> (status: Int, envelope: JSON) {
            var request: [String: JSON] = ["content": "Sale"]
            request.merge(fields) { _, new in new }
            return try rig.call("createTargetedMessage", .object(request), token: token)
        }
        let shopFilter = JSON.string(#"A("APP-1", ["iOS"])"#)
        #expect(rig.message(try targeted([:])) == "devices_filter is required")
        #expect(rig.message(try targeted(["devices_filter": 5])) == "devices_filter must be a string in Pushwoosh's filter language, found number")
        #expect(rig.message(try targeted(["devices_filter": #"A("APP-1""#]))?.hasPrefix("devices_filter ") == true)
        #expect(rig.message(try targeted(["devices_filter": shopFilter, "conditions": [["City", "EQ", "Oslo"]]]))
                    == "conditions is not a field of createTargetedMessage: devices_filter chooses the devices")
        // Every application the filter names must accept the token.
        #expect(try targeted(["devices_filter": #"A("APP-1") + A("APP-2")"#]).status == 403)
        #expect(rig.message(try targeted(["devices_filter": shopFilter, "send_rate": 0])) == "send_rate: must be at least 1 push per second")
        #expect(try targeted(["devices_filter": shopFilter], token: "news-secret").status == 403)
        #expect(try rig.backend.campaigns.messageCount(app: Rig.shop) == 0)

        let created = try targeted(["devices_filter": shopFilter])
        let code = try #require(created.envelope["response"]?["messageCode"]?.stringValue, "\(created.envelope.text)")
        let status = try #require(try rig.backend.campaigns.messageStatus(app: Rig.shop, code: code))
        #expect(status.spec.filter != nil && status.spec.content == ["default": "Sale"])
    }
}
