import Foundation
import Core
import SDKClient
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Remote API, funnel and sink helpers for campaign tests.
extension HeraldProcesses {
    /// The `deliveries` rows of one message, read-only from the database: hwid, status, reason, in hwid order.
    func deliveries(_ code: String) throws -> [(hwid: String, status: String, reason: String?)] {
        // Message codes are hex digits and dashes; the quote is doubled all the same.
        let literal = "'" + code.replacingOccurrences(of: "'", with: "''") + "'"
        return try query("""
            SELECT d.hwid, x.status, x.reason FROM deliveries x JOIN devices d ON d.id = x.device_id
            WHERE x.message_id = (SELECT id FROM messages WHERE code = \(literal)) ORDER BY d.hwid
            """, columns: 3).map { ($0[0] ?? "", $0[1] ?? "", $0[2]) }
    }

    /// `deliveries(_:)` by hwid.
    func deliveriesByDevice(_ code: String) throws -> [String: (status: String, reason: String?)] {
        Dictionary(uniqueKeysWithValues: try deliveries(code).map { ($0.hwid, (status: $0.status, reason: $0.reason)) })
    }

    static let apiToken = "shop-secret"

    /// The Shop app's sink (`var/sink.jsonl` relative to the configuration folder).
    var sinkPath: String { folder + "/var/sink.jsonl" }

    // MARK: Devices

    func register(_ device: SDKDevice) throws {
        try ok("registerDevice", SDKRequests.registerDevice(app: Self.appCode, device))
    }

    func unregister(_ hwid: String) throws {
        try ok("unregisterDevice", SDKRequests.unregisterDevice(app: Self.appCode, hwid: hwid))
    }

    /// POSTs form fields to a OneSignal helper route; returns the HTTP status and body.
    func oneSignal(_ path: String, _ fields: [(String, String)]) throws -> (status: Int, body: JSON) {
        try DeviceAPIClient(port: httpPort).oneSignal(path, fields)
    }

    /// Unsubscribes a device the way the OneSignal helper does (`notification_types=-2`).
    func unsubscribeViaOneSignal(_ hwid: String, platform: Int) throws {
        let (status, body) = try oneSignal("/onesignal/editdevice", [
            ("app_id", Self.appCode), ("player_id", hwid), ("device_type", platform == 1 ? "0" : "1"), ("notification_types", "-2"),
        ])
        guard status == 200, body["status"] == .int(1) else {
            throw HTTPClient.Failure(description: "editdevice failed: HTTP \(status) \(body.text)")
        }
    }

    // MARK: Remote API

    /// `createMessage` for the Shop app with `auth` (nil: none) and extra request fields.
    func createMessage(_ notifications: [JSON], auth: String? = apiToken, extra: [String: JSON] = [:]) throws -> (status: Int, body: JSON) {
        var request: [String: JSON] = ["application": .string(Self.appCode), "notifications": .array(notifications)]
        if let auth { request["auth"] = .string(auth) }
        request.merge(extra) { _, new in new }
        return try call("createMessage", .object(request))
    }

    /// A `createMessage` that must succeed; returns one code per notification.
    func send(_ notifications: [JSON], extra: [String: JSON] = [:]) throws -> [String] {
        let (status, body) = try createMessage(notifications, extra: extra)
        guard status == 200, body["status_code"] == .int(200),
            let codes = body["response"]?["Messages"]?.arrayValue?.compactMap(\.stringValue), codes.count == notifications.count
        else { throw HTTPClient.Failure(description: "createMessage failed: HTTP \(status) \(body.text)") }
        return codes
    }

    func send(_ notification: JSON) throws -> String { try send([notification])[0] }

    /// A Remote API call other than createMessage (deleteMessage, getMessageDetails) with `auth`.
    func remote(_ method: String, message code: String, auth: String = apiToken) throws -> (status: Int, body: JSON) {
        try call(method, ["auth": .string(auth), "application": .string(Self.appCode), "message": .string(code)])
    }

    /// `GET /api/v1/messages/<code>`.
    func funnel(_ code: String, token: String = apiToken) throws -> (status: Int, body: JSON) {
        let response = try client.request("GET", "/api/v1/messages/\(code)", headers: [("Authorization", "Token \(token)")])
        return (response.status, try JSON.parse(response.body))
    }

    /// Polls the funnel every 100 ms until the message has `status` (at most `timeout` seconds).
    @discardableResult
    func waitForMessage(_ code: String, status expected: String = "done", timeout: Double = 20) throws -> JSON {
        let deadline = Date().addingTimeInterval(timeout)
        var last = JSON.null
        while Date() < deadline {
            let (status, body) = try funnel(code)
            if status == 200 {
                last = body
                if body["status"] == .string(expected) { return body }
            }
            usleep(100_000)
        }
        throw HTTPClient.Failure(description: "message \(code) did not become \(expected) within \(timeout) s; last funnel \(last.text)")
    }

    /// Polls the funnel every 100 ms until `condition` holds (at most `timeout` seconds).
    @discardableResult
    func waitForFunnel(_ code: String, timeout: Double = 20, until condition: (JSON) -> Bool) throws -> JSON {
        let deadline = Date().addingTimeInterval(timeout)
        var last = JSON.null
        while Date() < deadline {
            let (status, body) = try funnel(code)
            if status == 200 {
                last = body
                if condition(body) { return body }
            }
            usleep(100_000)
        }
        throw HTTPClient.Failure(description: "message \(code): condition not met within \(timeout) s; last funnel \(last.text)")
    }

    /// Waits (at most 10 s) until `/metrics` reports `count` connected workers.
    func waitForWorkers(_ count: Int, timeout: Double = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let metrics = try client.request("GET", "/metrics").text
            if metrics.split(separator: "\n").contains(where: { $0 == "herald_workers_connected \(count)" }) { return }
            usleep(100_000)
        }
        let logs = workers.indices.map { (try? String(contentsOfFile: workerLogPath($0), encoding: .utf8).suffix(1500)) ?? "" }
        throw HTTPClient.Failure(description: "\(count) workers did not connect within \(timeout) s; worker logs: \(logs)")
    }

    /// Polls `/metrics` every 100 ms until `condition` holds on its text (at most `timeout` seconds).
    @discardableResult
    func waitForMetrics(timeout: Double = 5, until condition: (String) -> Bool) throws -> String {
        let deadline = Date().addingTimeInterval(timeout)
        var text = ""
        while Date() < deadline {
            text = try client.request("GET", "/metrics").text
            if condition(text) { return text }
            usleep(100_000)
        }
        throw HTTPClient.Failure(description: "/metrics condition not met within \(timeout) s:\n\(text)")
    }

    /// The `herald_worker_info` series of a `/metrics` text: each connected worker's label (its
    /// stable name), id, host and address.
    static func workerInfo(_ metrics: String) -> [(worker: String, id: String, host: String, address: String)] {
        metrics.matches(of: #/herald_worker_info\{worker="([^"]*)",id="([^"]*)",host="([^"]*)",address="([^"]*)"\} 1\n/#).map {
            (String($0.output.1), String($0.output.2), String($0.output.3), String($0.output.4))
        }
    }

    /// This machine's name, as the kernel has it.
    static func machineHostName() throws -> String {
        try String(contentsOfFile: "/proc/sys/kernel/hostname", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The Shop app's dashboard page, signed in through the form.
    func dashboardPage() throws -> String {
        let body = "app=\(Self.appCode)&token=\(Self.apiToken)"
        let response = try client.request("POST", "/dashboard", body: Array(body.utf8),
                                          headers: [("Content-Type", "application/x-www-form-urlencoded"),
                                                    ("Origin", "http://127.0.0.1:\(httpPort)")])
        guard response.status == 200 else { throw HTTPClient.Failure(description: "dashboard: HTTP \(response.status)") }
        return response.text
    }

    // MARK: Sink and database

    /// Every complete line of the Shop sink, parsed.
    func sinkLines() throws -> [JSON] { try jsonLines(atPath: sinkPath) }

    /// The sink lines of one message.
    func sink(_ code: String) throws -> [JSON] { try sinkLines().filter { $0["message"] == .string(code) } }

    /// The hwids the sink received for one message.
    func sinkHWIDs(_ code: String) throws -> [String] { try sink(code).compactMap { $0["hwid"]?.stringValue } }

    /// Rows in the `messages` table (read-only, from the live database).
    func messageCount() throws -> Int { try count("SELECT count(*) FROM messages") }

    /// Waits until workers have folded every stored report into the statistics (read from the database).
    func waitForReportsProcessed(timeout: Double = 15) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try count("SELECT count(*) FROM reports WHERE processed_at IS NULL") == 0 { return }
            usleep(100_000)
        }
        throw HTTPClient.Failure(description: "reports were not processed within \(timeout) s")
    }

    func killWorker(_ index: Int) {
        let worker = workers[index]
        kill(worker.processIdentifier, SIGKILL)
        worker.waitUntilExit()
    }
}

/// `yyyy-MM-dd HH:mm` (or with seconds) in UTC, written independently of the product's formatter.
func utcText(_ seconds: Int64, withSeconds: Bool = false) -> String {
    var time = time_t(seconds)
    var parts = tm()
    gmtime_r(&time, &parts)
    let base = String(format: "%04d-%02d-%02d %02d:%02d", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min))
    return withSeconds ? base + String(format: ":%02d", Int(parts.tm_sec)) : base
}

func unixNow() -> Int64 { Int64(Date().timeIntervalSince1970) }

/// Polls `condition` every 50 ms until it holds; throws naming `what` after `timeout` seconds.
func waitUntil(_ what: String, timeout: Double, _ condition: () throws -> Bool) throws {
    let deadline = Date().addingTimeInterval(timeout)
    while try !condition() {
        guard Date() < deadline else { throw HTTPClient.Failure(description: "\(what) within \(timeout) s") }
        usleep(50_000)
    }
}
