import Foundation
import Core
import SDKClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `herald-load edge` and `herald-load campaign` against a real herald-ingest and herald-worker: a
/// Herald app configured from the edge's `edge.json` delivers to it over HTTP/2 and TLS, and what the
/// edge counts, what Herald's funnel says and what `campaign --json` writes agree.
@Suite(.serialized) struct EdgeTests {
    let herald: HeraldProcesses
    let directory: String
    var edge: Process?
    static let iosDevices = 12
    static let androidDevices = 8
    static let huaweiDevices = 5

    init() throws {
        herald = try HeraldProcesses(throttle: (1000, 3600))
        directory = herald.folder + "/edge"
    }

    /// The test's devices: iOS with 64-hex APNs tokens, Android with FCM tokens and Huawei with Push Kit
    /// tokens; the last of each is dead.
    var devices: [SDKDevice] {
        (0..<Self.iosDevices).map { index in
            SDKDevice(String(format: "IOS-%04d", index), platform: 1, token: String(format: "%064x", 0xA000 + index), gateway: "production")
        } + (0..<Self.androidDevices).map { index in
            SDKDevice(String(format: "android-%04d", index), platform: 3, token: "fcm\(index):APA91b" + String(repeating: "x", count: 40))
        } + (0..<Self.huaweiDevices).map { index in
            SDKDevice(String(format: "huawei-%04d", index), platform: 17, token: "IQAAAACy\(index)" + String(repeating: "h", count: 40))
        }
    }

    var deadTokens: [String] {
        [Self.iosDevices - 1, Self.iosDevices + Self.androidDevices - 1, devices.count - 1].map { devices[$0].token }
    }

    /// Starts the edge (with `extra` flags) and waits (at most 20 s) for its READY line; returns edge.json.
    mutating func startEdge(_ extra: [String]) throws -> JSON {
        let log = herald.folder + "/edge.log"
        edge = try HeraldProcesses.launch("herald-load", arguments: ["edge", "--dir", directory, "--threads", "2"] + extra, log: log)
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            if output.split(separator: "\n").contains("READY") { return try JSON.parse(Data(contentsOf: URL(fileURLWithPath: directory + "/edge.json"))) }
            guard edge?.isRunning == true else { break }
            usleep(50_000)
        }
        throw HTTPClient.Failure(description: "the edge did not print READY: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    /// What `herald-load edge --print-app-config` prints for the Shop app.
    func printedAppConfig() throws -> JSON {
        let (status, output) = try HeraldProcesses.runToCompletion(
            "herald-load", arguments: ["edge", "--dir", directory, "--print-app-config", HeraldProcesses.appCode], limit: 10)
        #expect(status == 0, "\(output)")
        return try JSON.parse(output)
    }

    /// Configures the Shop app to deliver to the edge (topic overridable) and starts ingest and a worker.
    func startHerald(edge settings: JSON, topic: String? = nil) throws {
        let config = try herald.writeConfig("herald-edge.json") { members in
            guard case .array(var apps)? = members["apps"], case .object(var shop) = apps[0] else { return }
            shop["sink"] = nil
            shop["apns"] = [
                "team_id": settings["team_id"]!, "key_id": settings["key_id"]!, "key_path": settings["key_path"]!,
                "topic": topic.map(JSON.string) ?? settings["topic"]!, "production_url": settings["apns_url"]!,
                "sandbox_url": settings["apns_url"]!, "ca_file": settings["ca_file"]!,
            ]
            shop["fcm"] = ["service_account_path": settings["service_account_path"]!, "endpoint": settings["fcm_url"]!,
                           "ca_file": settings["ca_file"]!]
            shop["huawei"] = ["app_id": settings["huawei_app_id"]!, "client_secret_file": settings["huawei_client_secret_file"]!,
                              "token_url": settings["huawei_token_url"]!, "endpoint": settings["huawei_endpoint"]!,
                              "ca_file": settings["ca_file"]!]
            apps[0] = .object(shop)
            members["apps"] = .array(apps)
        }
        try herald.startIngest(config: config)
        try herald.startWorker(config: config)
        try herald.waitForWorkers(1)
        for device in devices { try herald.register(device) }
    }

    func stats(_ settings: JSON) throws -> JSON {
        let url = try TargetURL(parsing: settings["admin_url"]!.stringValue!)
        let response = try HTTPClient(host: url.host, port: url.port).request("GET", "/stats")
        #expect(response.status == 200)
        return try JSON.parse(response.body)
    }

    func stopEdge() {
        guard let edge, edge.isRunning else { return }
        kill(edge.processIdentifier, SIGTERM)
        edge.waitUntilExit()
    }

    @Test mutating func aCampaignToTheEdgeMatchesHeraldsFunnelAndTheDevicesReportBack() throws {
        let hwids = herald.folder + "/hwids.txt"
        try devices.map { "\($0.token) \($0.hwid)" }.joined(separator: "\n").write(toFile: hwids, atomically: true, encoding: .utf8)
        let dead = herald.folder + "/dead.txt"
        try deadTokens.joined(separator: "\n").write(toFile: dead, atomically: true, encoding: .utf8)
        let settings = try startEdge(["--dead-tokens", dead, "--report-to", "http://127.0.0.1:\(herald.httpPort)",
                                      "--app", HeraldProcesses.appCode, "--open-rate", "0.5", "--report-delay", "0.1", "--hwids", hwids])
        defer { stopEdge() }
        for key in ["apns_url", "fcm_url", "ca_file", "team_id", "key_id", "key_path", "topic", "service_account_path", "admin_url",
                    "huawei_app_id", "huawei_client_secret_file", "huawei_token_url", "huawei_endpoint"] {
            #expect(settings[key]?.stringValue?.isEmpty == false, "edge.json \(key)")
        }
        // --print-app-config gives the entries this test configures Herald with.
        let printed = try printedAppConfig()
        #expect(printed["code"] == .string(HeraldProcesses.appCode))
        #expect(printed["apns"] == ["team_id": settings["team_id"]!, "key_id": settings["key_id"]!, "key_path": settings["key_path"]!,
                                    "topic": settings["topic"]!, "production_url": settings["apns_url"]!, "sandbox_url": settings["apns_url"]!,
                                    "ca_file": settings["ca_file"]!], "\(printed.text)")
        #expect(printed["fcm"] == ["service_account_path": settings["service_account_path"]!, "endpoint": settings["fcm_url"]!,
                                   "ca_file": settings["ca_file"]!], "\(printed.text)")
        #expect(printed["huawei"] == ["app_id": settings["huawei_app_id"]!, "client_secret_file": settings["huawei_client_secret_file"]!,
                                      "token_url": settings["huawei_token_url"]!, "endpoint": settings["huawei_endpoint"]!,
                                      "ca_file": settings["ca_file"]!], "\(printed.text)")
        try startHerald(edge: settings)

        let json = herald.folder + "/campaign.json"
        let (status, output) = try Self.run(["campaign", "--target", "http://127.0.0.1:\(herald.httpPort)", "--app", HeraldProcesses.appCode,
                                             "--token", HeraldProcesses.apiToken, "--edge-dir", directory, "--json", json, "--timeout", "60"])
        // The three dead tokens are failed pushes: exit 1 without --allow-errors, and the reason says so.
        #expect(status == 1, "\(output)")
        #expect(output.contains("3 pushes failed"), "\(output)")
        let result = try JSON.parse(Data(contentsOf: URL(fileURLWithPath: json)))
        let code = try #require(result["message"]?.stringValue)
        let funnel = try herald.waitForMessage(code)
        let total = Int64(devices.count)
        #expect(funnel["targeted"] == .int(total) && funnel["sent"] == .int(total - 3) && funnel["failed"] == 3, "\(funnel.text)")
        // campaign --json says what Herald says, and what the edge received.
        for key in ["targeted", "sent", "failed"] { #expect(result[key] == funnel[key], "\(key): \(result.text)") }
        #expect(result["edge_received"] == .int(total) && result["edge_accepted"] == .int(total - 3), "\(result.text)")
        for key in ["first_push_s", "done_s", "pushes_per_s"] { #expect((result[key]?.lenientDouble ?? -1) > 0, "\(key): \(result.text)") }
        // Second by second, the pushes add up to all the edge received.
        #expect(result["pushes_series"]?.arrayValue?.compactMap(\.lenientInt).reduce(0, +) == total, "\(result.text)")
        #expect((result["first_push_s"]?.lenientDouble ?? 0) <= (result["done_s"]?.lenientDouble ?? 0))

        // The edge's own counts: every accepted push is a sent one, the dead tokens refused as Apple, Google
        // and Huawei do.
        let counts = try stats(settings)
        #expect(counts["apns"]?["accepted"] == .int(Int64(Self.iosDevices - 1)) && counts["fcm"]?["accepted"] == .int(Int64(Self.androidDevices - 1)))
        #expect(counts["apns"]?["rejected"] == ["Unregistered": 1] && counts["fcm"]?["rejected"] == ["UNREGISTERED": 1], "\(counts.text)")
        #expect(counts["huawei"]?["accepted"] == .int(Int64(Self.huaweiDevices - 1)) && counts["huawei"]?["rejected"] == ["80300007": 1],
                "\(counts.text)")
        #expect((counts["fcm"]?["tokens_issued"]?.lenientInt ?? 0) >= 1 && (counts["huawei"]?["tokens_issued"]?.lenientInt ?? 0) >= 1)
        #expect(counts["connections"]?.lenientInt.map { $0 >= 1 } == true)

        // The devices reported back: every sent push delivered, about half opened. campaign waited
        // for those reports (the edge's default report wait) and its figures are the final ones.
        let edgeReported = try stats(settings)["reported"]
        let opened = edgeReported?["opened"]?.lenientInt ?? 0
        #expect(edgeReported?["delivered"] == .int(total - 3) && opened > 0 && opened < total - 3 && edgeReported?["pending"] == 0,
                "\(edgeReported?.text ?? "")")
        #expect(result["delivered"] == .int(total - 3) && result["opened"] == .int(opened) && result["still_arriving"] == [], "\(result.text)")
        #expect(result["report_wait_s"]?.lenientDouble == 6, "\(result.text)")
        #expect(output.contains("reports   complete"), "\(output)")
        let final = try herald.waitForMessage(code)
        #expect(final["delivered"] == .int(total - 3) && final["opened"] == .int(opened), "\(final.text)")

        // The dead tokens' devices are no longer targeted.
        let (again, againOutput) = try Self.run(["campaign", "--target", "http://127.0.0.1:\(herald.httpPort)", "--app", HeraldProcesses.appCode,
                                                 "--token", HeraldProcesses.apiToken, "--edge-dir", directory, "--json", json, "-q"])
        #expect(again == 0, "\(againOutput)")
        let second = try JSON.parse(Data(contentsOf: URL(fileURLWithPath: json)))
        #expect(second["targeted"] == .int(total - 3) && second["sent"] == .int(total - 3) && second["edge_received"] == .int(total - 3), "\(second.text)")
    }

    /// Also: with fixed ports, a restarted edge keeps the app configuration Herald was given.
    @Test mutating func aWrongTopicIsRefusedWithApplesReason() throws {
        let ports = try (0..<3).map { _ in String(try HeraldProcesses.freePort()) }
        let fixed = ["--apns-port", ports[0], "--fcm-port", ports[1], "--admin-port", ports[2]]
        _ = try startEdge(fixed)
        let before = try printedAppConfig()
        #expect(before["apns"]?["production_url"] == .string("https://127.0.0.1:\(ports[0])"), "\(before.text)")
        stopEdge()
        let settings = try startEdge(fixed)
        defer { stopEdge() }
        #expect(try printedAppConfig() == before)
        #expect(settings["admin_url"] == .string("http://127.0.0.1:\(ports[2])"))
        try startHerald(edge: settings, topic: "com.example.someoneelse")
        let code = try herald.send(["send_date": "now", "content": "Hello", "platforms": [1]])
        let funnel = try herald.waitForMessage(code, timeout: 30)
        let ios = Int64(Self.iosDevices)
        #expect(funnel["failed"] == .int(ios) && funnel["sent"] == 0, "\(funnel.text)")
        #expect(funnel["errors"]?["TopicDisallowed"] == .int(ios), "\(funnel.text)")
        #expect(try stats(settings)["apns"]?["rejected"] == ["TopicDisallowed": .int(ios)])
    }

    @Test func aProviderTokenSignedByAnotherKeyIsRefused() throws {
        var test = self
        let settings = try test.startEdge([])
        defer { test.stopEdge() }
        // Another .p8 under the edge's key id: Herald signs with it, the edge cannot verify it.
        let other = herald.folder + "/other.p8"
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", other]
        try openssl.run()
        openssl.waitUntilExit()
        var members = try #require(settings.objectValue)
        members["key_path"] = .string(other)
        try test.startHerald(edge: .object(members))
        let code = try herald.send(["send_date": "now", "content": "Hello", "platforms": [1]])
        // Herald keeps the pushes for a later attempt or fails them; either way none is sent, and the edge says why.
        let deadline = Date().addingTimeInterval(20)
        var rejected: JSON?
        while Date() < deadline {
            rejected = try stats(settings)["apns"]?["rejected"]
            if (rejected?["InvalidProviderToken"]?.lenientInt ?? 0) > 0 { break }
            usleep(100_000)
        }
        #expect((rejected?["InvalidProviderToken"]?.lenientInt ?? 0) > 0, "\(rejected?.text ?? "")")
        #expect(try stats(settings)["apns"]?["accepted"] == 0)
        #expect(try herald.funnel(code).body["sent"] == 0)
    }

    /// Runs herald-load to completion (at most `limit` seconds); returns its exit status and output.
    static func run(_ arguments: [String], limit: Double = 90) throws -> (status: Int32, output: String) {
        try HeraldProcesses.runToCompletion("herald-load", arguments: arguments, limit: limit)
    }
}
