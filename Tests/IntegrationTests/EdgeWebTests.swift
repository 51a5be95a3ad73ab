import Foundation
import Core
import SDKClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Browsers end to end through herald-load alone: `fleet --web` registers Web SDK installs on a real
/// herald-ingest, a real herald-worker configured from `edge --print-app-config` delivers a campaign
/// to the edge's Web Push port, and the edge decrypts every push with the browser's key derived from
/// the seed and reports it back; a worker signing with another VAPID key is refused.
@Suite(.serialized) struct EdgeWebTests {
    let herald: HeraldProcesses
    let directory: String
    static let seed = "21"
    static let devices = 60

    init() throws {
        herald = try HeraldProcesses(throttle: (1000, 3600))
        directory = herald.folder + "/edge"
    }

    /// Starts the edge and waits (at most 20 s) for READY; returns edge.json and the process.
    func startEdge(_ extra: [String]) throws -> (settings: JSON, process: Process) {
        let log = herald.folder + "/edge.log"
        let process = try HeraldProcesses.launch("herald-load", arguments: ["edge", "--dir", directory, "--threads", "2", "--fleet-seed", Self.seed]
                                                 + extra, log: log)
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, process.isRunning {
            if ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").contains("READY") {
                return (try JSON.parse(Data(contentsOf: URL(fileURLWithPath: directory + "/edge.json"))), process)
            }
            usleep(50_000)
        }
        kill(process.processIdentifier, SIGTERM)
        throw HTTPClient.Failure(description: "the edge did not print READY: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    static func stop(_ process: Process) {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }

    /// Configures the Shop app with the `web` entry `edge --print-app-config` prints (its VAPID key
    /// file replaced by `vapidKeyFile` when given) and starts ingest and a worker.
    func startHerald(vapidKeyFile: String? = nil) throws {
        let (status, output) = try HeraldProcesses.runToCompletion(
            "herald-load", arguments: ["edge", "--dir", directory, "--print-app-config", HeraldProcesses.appCode], limit: 10)
        #expect(status == 0, "\(output)")
        let printed = try JSON.parse(output)
        guard case .object(var web)? = printed["web"] else { throw HTTPClient.Failure(description: "no web entry: \(output)") }
        #expect(web["allow_private_endpoints"] == true && web["subject"]?.stringValue?.hasPrefix("mailto:") == true, "\(output)")
        if let vapidKeyFile { web["vapid_private_key_file"] = .string(vapidKeyFile) }
        let config = try herald.writeConfig("herald-web.json") { members in
            guard case .array(var apps)? = members["apps"], case .object(var shop) = apps[0] else { return }
            shop["sink"] = nil
            shop["web"] = .object(web)
            apps[0] = .object(shop)
            members["apps"] = .array(apps)
        }
        try herald.startIngest(config: config)
        try herald.startWorker(config: config)
        try herald.waitForWorkers(1)
    }

    /// Runs a fleet whose `share` of devices are browsers subscribed at the edge; returns its results.
    func runFleet(share: String, pushService: String) throws -> JSON {
        let json = herald.folder + "/fleet.json.out"
        let (status, output) = try HeraldProcesses.runToCompletion("herald-load", arguments: [
            "fleet", "--target", "http://127.0.0.1:\(herald.httpPort)", "--app", HeraldProcesses.appCode, "--devices", String(Self.devices),
            "--duration", "3", "--connections", "8", "--seed", Self.seed, "--web", share, "--web-push", pushService, "--json", json, "-q",
        ], limit: 60)
        #expect(status == 0, "\(output)")
        return try JSON.parse(Data(contentsOf: URL(fileURLWithPath: json)))
    }

    func browsers() throws -> Int64 {
        Int64(try herald.query("SELECT COUNT(*) FROM devices WHERE platform IN (11, 12)", columns: 1).first?[0].flatMap { Int($0) } ?? -1)
    }

    func stats(_ settings: JSON) throws -> JSON {
        let url = try TargetURL(parsing: settings["admin_url"]!.stringValue!)
        return try JSON.parse(try HTTPClient(host: url.host, port: url.port).request("GET", "/stats").body)
    }

    @Test func aFleetsBrowsersReceiveACampaignThroughTheEdgeDecrypted() throws {
        let (settings, edge) = try startEdge(["--report-to", "http://127.0.0.1:\(herald.httpPort)", "--app", HeraldProcesses.appCode,
                                              "--fleet-devices", String(Self.devices), "--report-delay", "0.1"])
        defer { Self.stop(edge) }
        let pushService = try #require(settings["web_push_url"]?.stringValue)
        #expect(pushService.hasPrefix("https://127.0.0.1:") && settings["vapid_public_key"]?.stringValue?.count == 87, "\(settings.text)")
        try startHerald()
        let results = try runFleet(share: "0.5", pushService: pushService)
        #expect(results["web_fraction"] == .double(0.5), "\(results.text)")
        let browsers = try browsers()
        #expect(browsers > 10 && browsers < Int64(Self.devices) - 10, "\(browsers) browsers of \(Self.devices)")
        let types = try herald.query("SELECT DISTINCT platform FROM devices WHERE platform IN (11, 12) ORDER BY platform", columns: 1)
        #expect(types.map { $0[0] } == ["11", "12"], "Chrome and Firefox: \(types)")

        let code = try herald.send(["send_date": "now", "content": "Spring sale", "title": "Shop", "platforms": [11, 12],
                                    "link": "https://shop.example/sale"])
        let funnel = try herald.waitForMessage(code, timeout: 30)
        #expect(funnel["targeted"] == .int(browsers) && funnel["sent"] == .int(browsers) && funnel["failed"] == 0, "\(funnel.text)")
        // The edge took every push: VAPID token checked, payload decrypted with the browser's key.
        var counts = try stats(settings)
        #expect(counts["web"]?["accepted"] == .int(browsers) && counts["web"]?["rejected"] == [:], "\(counts.text)")
        // Every browser reported the push delivered, with the hash its decrypted payload carried.
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline, counts["reported"]?["delivered"] != .int(browsers) || counts["reported"]?["pending"] != 0 {
            usleep(100_000)
            counts = try stats(settings)
        }
        #expect(counts["reported"]?["delivered"] == .int(browsers) && counts["reported"]?["unknown_devices"] == 0, "\(counts.text)")
        let final = try herald.waitForMessage(code)
        #expect(final["delivered"] == .int(browsers), "\(final.text)")
        // The admin port's /metrics counts the same.
        let url = try TargetURL(parsing: settings["admin_url"]!.stringValue!)
        let metrics = try HTTPClient(host: url.host, port: url.port).request("GET", "/metrics").text
        #expect(metrics.contains("herald_load_edge_pushes_total{provider=\"web\",outcome=\"accepted\",reason=\"\"} \(browsers)\n"), "\(metrics)")
        #expect(metrics.contains("herald_load_edge_reports_total{kind=\"delivered\"} \(browsers)\n"), "\(metrics)")
    }

    @Test func aWorkerSigningWithAnotherVAPIDKeyIsRefusedByTheEdge() throws {
        let (settings, edge) = try startEdge([])
        defer { Self.stop(edge) }
        let other = herald.folder + "/other-vapid.pem"
        let (made, output) = try HeraldProcesses.runToCompletion("herald-ingest", arguments: ["--generate-vapid-key", other], limit: 10)
        #expect(made == 0, "\(output)")
        try startHerald(vapidKeyFile: other)
        _ = try runFleet(share: "1", pushService: try #require(settings["web_push_url"]?.stringValue))
        let browsers = try browsers()
        #expect(browsers == Int64(Self.devices))
        let code = try herald.send(["send_date": "now", "content": "Hello", "platforms": [11, 12]])
        let funnel = try herald.waitForMessage(code, timeout: 30)
        #expect(funnel["sent"] == 0 && funnel["failed"] == .int(browsers) && funnel["errors"]?["VAPIDKeyRejected"] == .int(browsers), "\(funnel.text)")
        let counts = try stats(settings)
        #expect(counts["web"]?["accepted"] == 0 && counts["web"]?["rejected"] == ["VAPIDKeyMismatch": .int(browsers)], "\(counts.text)")
        let url = try TargetURL(parsing: settings["admin_url"]!.stringValue!)
        let metrics = try HTTPClient(host: url.host, port: url.port).request("GET", "/metrics").text
        #expect(metrics.contains("herald_load_edge_pushes_total{provider=\"web\",outcome=\"rejected\",reason=\"VAPIDKeyMismatch\"} \(browsers)\n"),
                "\(metrics)")
    }

    @Test func aBadScenarioFileIsRefusedNamingTheKeyWithStatus2() throws {
        let file = herald.folder + "/scenario.json"
        try #"{"platforms": {"web": 2}}"#.write(toFile: file, atomically: true, encoding: .utf8)
        let (status, output) = try HeraldProcesses.runToCompletion("herald-load", arguments: [
            "fleet", "--target", "http://127.0.0.1:9", "--app", HeraldProcesses.appCode, "--devices", "5", "--duration", "1", "--scenario", file,
        ], limit: 10)
        #expect(status == 2 && output.contains("--scenario \(file): platforms.web must be a fraction from 0 to 1, got 2"), "\(output)")
    }
}
