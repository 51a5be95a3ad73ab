import Foundation
import Core
import SDKClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `herald-load fleet` against a real herald-ingest: what it says it did is what Herald stored.
@Suite(.serialized) struct FleetTests {
    let herald: HeraldProcesses
    let app = HeraldProcesses.appCode

    init() throws {
        herald = try HeraldProcesses()
        // AppBuild is the fleet's version tag: declared, as an app that uses version conditions would.
        let config = try herald.writeConfig("fleet.json") { members in
            guard case .array(var apps)? = members["apps"], case .object(var shop) = apps[0] else { return }
            shop["tags"] = ["AppBuild": "version"]
            apps[0] = .object(shop)
            members["apps"] = .array(apps)
        }
        try herald.startIngest(config: config)
    }

    /// Runs herald-load to completion (at most `limit` seconds); returns its exit status and output.
    static func fleet(_ arguments: [String], limit: Double = 60) throws -> (status: Int32, output: String) {
        try HeraldProcesses.runToCompletion("herald-load", arguments: ["fleet"] + arguments, limit: limit)
    }

    /// Runs `herald-load ARGUMENTS` to completion (at most `limit` seconds).
    static func heraldLoad(_ arguments: [String], limit: Double = 60) throws -> (status: Int32, output: String) {
        try HeraldProcesses.runToCompletion("herald-load", arguments: arguments, limit: limit)
    }

    static func results(_ path: String) throws -> JSON { try JSON.parse(Data(contentsOf: URL(fileURLWithPath: path))) }

    @Test func whatTheFleetCountsIsWhatHeraldStored() throws {
        let json = herald.folder + "/fleet.json.out"
        let report = herald.folder + "/fleet.html"
        let started = Int64(Date().timeIntervalSince1970)
        let (status, output) = try Self.fleet([
            "--target", "http://127.0.0.1:\(herald.httpPort)", "--app", app, "--devices", "300", "--duration", "3",
            "--connections", "16", "--onesignal", "0.1", "--seed", "11", "--json", json, "--report", report,
        ])
        #expect(status == 0, "\(output)")
        let results = try Self.results(json)
        let requests = try #require(results["requests"]?.objectValue)
        func ok(_ method: String) -> Int64 { requests[method]?["ok"]?.lenientInt ?? 0 }
        // Every request succeeded, and the documented keys are there.
        #expect(results["devices"] == 300)
        #expect(results["duration_s"]?.lenientDouble == 3)
        #expect((results["rate"]?.lenientDouble ?? 0) > 50)
        for (method, entry) in requests {
            #expect(entry["errors"] == [:], "\(method)")
            #expect(entry["ok"]?.lenientInt == entry["requests"]?.lenientInt, "\(method)")
            for key in ["p50_ms", "p99_ms", "max_ms"] { #expect((entry[key]?.lenientDouble ?? -1) > 0, "\(method) \(key)") }
        }
        // Which builds ran, and when: herald-load's and Herald's versions as /healthz gives it.
        let (_, ingestVersion) = try HeraldProcesses.runToCompletion("herald-ingest", arguments: ["--version"], limit: 10)
        #expect(results["herald_version"]?.stringValue.map { "herald-ingest \($0)\n" } == ingestVersion, "\(results)")
        #expect(results["herald_load_version"]?.stringValue == ingestVersion.dropFirst("herald-ingest ".count).trimmingCharacters(in: .newlines))
        let startedAt = try #require(results["started_at"]?.stringValue.flatMap { ISO8601DateFormatter().date(from: $0) })
        #expect(startedAt.timeIntervalSince1970 >= Double(started) - 1 && startedAt.timeIntervalSince1970 <= Date().timeIntervalSince1970)
        #expect(Set(requests.keys).isSuperset(of: ["registerDevice", "setTags", "applicationOpen", "getTags", "postEvent",
                                                  "onesignal/adddevice", "onesignal/editdevice"]))

        // Devices: each registered once, through the SDK or the helper, and Herald holds exactly those.
        let registered = try #require(results["registered"]?.lenientInt)
        #expect(registered == ok("registerDevice") + ok("onesignal/adddevice"))
        #expect(registered == 300)  // each device's first turn registers it
        #expect(try herald.count("SELECT COUNT(*) FROM devices") == registered)
        // The audience it announces is what Herald would target: subscribed, with notifications allowed.
        let optedOut = try #require(results["opted_out"]?.lenientInt), unsubscribed = try #require(results["unsubscribed"]?.lenientInt)
        #expect(optedOut > 0 && results["expected_audience"]?.lenientInt == registered - optedOut - unsubscribed, "\(results)")
        let reachable = try herald.count("SELECT COUNT(*) FROM devices WHERE subscribed AND COALESCE(notification_types, 1) <> 0")
        #expect(reachable == registered - optedOut - unsubscribed, "Herald: \(reachable); \(results)")
        #expect(output.contains("\(optedOut) of them opted out") && output.contains("reaches \(registered - optedOut - unsubscribed) of them"), "\(output)")
        // Events: every acknowledged postEvent is a stored report, and the events API agrees by name.
        #expect(try herald.count("SELECT COUNT(*) FROM reports WHERE kind = 'event'") == ok("postEvent"))
        let now = Int64(Date().timeIntervalSince1970)
        let answer = try herald.client.request("GET", "/api/v1/apps/\(app)/events?from=\(started - 60)&to=\(now + 60)",
                                               headers: [("Authorization", "Token shop-secret")])
        let stats = try JSON.parse(answer.body)
        var recorded: [String: Int64] = [:]
        for event in stats["events"]?.arrayValue ?? [] {
            recorded[event["name"]?.stringValue ?? ""] = event["count"]?.lenientInt
        }
        let sent = try #require(results["events"]?.objectValue).mapValues { $0.lenientInt ?? -1 }
        #expect(recorded == sent)
        #expect(recorded.values.reduce(0, +) == ok("postEvent"))
        // Herald's own request counters (/metrics) saw exactly the requests the fleet counted, all
        // answered HTTP 200 with status_code 200 (the helper's routes carry no status_code).
        let metrics = try herald.client.request("GET", "/metrics").text
        var served: [String: Int64] = [:]
        for line in metrics.split(separator: "\n") where line.hasPrefix("herald_http_requests_total{") {
            guard let routeStart = line.range(of: "route=\""), let value = line.split(separator: " ").last.flatMap({ Int64($0) }) else { continue }
            let route = line[routeStart.upperBound...].prefix { $0 != "\"" }
            #expect(line.contains("status=\"200\""), "\(line)")
            served[String(route), default: 0] += value
        }
        for (method, entry) in requests {
            let route = method.replacingOccurrences(of: "/", with: "_")
            #expect(served[route] == entry["requests"]?.lenientInt, "\(method): Herald served \(served[route] ?? 0)")
        }
        // Tags of all seven types were stored.
        #expect(try herald.count("SELECT COUNT(DISTINCT type) FROM tag_definitions") == 7)

        // The report is one self-contained page with its charts.
        let html = try String(contentsOfFile: report, encoding: .utf8)
        #expect(html.hasPrefix("<!DOCTYPE html>") && html.contains("<svg") && html.contains("registerDevice"))
        #expect(!html.contains("<script") && !html.contains("src=\"http") && !html.contains("href=\"http"))
        // Not a terminal: no progress line, just the summary.
        #expect(!output.contains("\r") && output.contains("total") && output.contains("errors: none"))
    }

    @Test func theOpenLoopKeepsItsRate() throws {
        let json = herald.folder + "/open.json"
        let (status, output) = try Self.fleet([
            "--target", "http://127.0.0.1:\(herald.httpPort)/json/1.3/", "--app", app, "--devices", "500", "--duration", "3",
            "--rate", "200", "--connections", "8", "--json", json,
        ])
        #expect(status == 0, "\(output)")
        let results = try Self.results(json)
        // 200/s for 3 s: 600 scheduled, each started (or, if a slow reply held its connection past
        // the end, counted as dropped: how many depends on the machine's load), and the achieved
        // rate follows.
        let total = results["total"]?["requests"]?.lenientInt ?? 0
        let dropped = results["dropped"]?.lenientInt ?? -1
        #expect(total + dropped == 600 && total > 0, "\(output)")
        #expect(results["mode"] == "open" && results["target_rate"]?.lenientDouble == 200)
        #expect(abs((results["rate"]?.lenientDouble ?? 0) - Double(total) / 3) < 1)
    }

    /// Thresholds for CI: judged at the end, printed as a table, written to the JSON; a run whose
    /// requests all succeeded still exits 1 when a threshold fails, and says which.
    @Test func thresholdsDecideTheExitStatus() throws {
        let json = herald.folder + "/thresholds.json"
        let common = ["--target", "http://127.0.0.1:\(herald.httpPort)", "--app", app, "--devices", "50", "--duration", "1",
                      "--rate", "100", "--connections", "4", "--threads", "1", "--json", json]
        let (passed, passedOutput) = try Self.fleet(common + ["--threshold", "registerDevice.p99<60s", "--threshold", "errors<0.1%"])
        #expect(passed == 0, "\(passedOutput)")
        #expect(passedOutput.contains("thresholds:\n  registerDevice.p99<60s") && !passedOutput.contains("FAILED"), "\(passedOutput)")
        let (failed, failedOutput) = try Self.fleet(common + ["--threshold", "errors<0.1%", "--threshold", "p50<1us"])
        #expect(failed == 1, "\(failedOutput)")
        #expect(failedOutput.contains("errors: none") && failedOutput.contains("  errors<0.1%  ") && failedOutput.contains("FAILED"), "\(failedOutput)")
        #expect(failedOutput.contains("herald-load fleet: thresholds failed: p50<1us ("), "\(failedOutput)")
        let verdicts = try #require(try Self.results(json)["thresholds"]?.arrayValue)
        #expect(verdicts.map { $0["passed"] } == [true, false] && verdicts[1]["threshold"] == "p50<1us", "\(verdicts)")
        // A threshold that does not parse is a bad command line: exit 2 before anything is sent.
        let (bad, badOutput) = try Self.fleet(common + ["--threshold", "registerDevice.p99"])
        #expect(bad == 2 && badOutput.contains("needs a comparison"), "\(badOutput)")
    }

    /// An open loop in stages: the rate ramps up and down, and exactly the requests under the curve
    /// are scheduled (each started, or dropped if a slow reply held its connection at the end).
    @Test func stagesRampTheOpenLoop() throws {
        let json = herald.folder + "/stages.json"
        let (status, output) = try Self.fleet([
            "--target", "http://127.0.0.1:\(herald.httpPort)", "--app", app, "--devices", "200", "--stages", "1s:100,1s:200,1s:0",
            "--connections", "8", "--threads", "1", "--json", json, "--threshold", "errors<0.1%", "--threshold", "p99<60s",
        ])
        #expect(status == 0, "\(output)")
        let results = try Self.results(json)
        // 50 + 150 + 100 requests.
        let total = results["total"]?["requests"]?.lenientInt ?? 0
        #expect(results["scheduled"] == 300 && total + (results["dropped"]?.lenientInt ?? -1) == 300 && total > 0, "\(output)")
        #expect(results["mode"] == "open" && results["duration_s"]?.lenientDouble == 3 && results["stages"]?.arrayValue?.count == 3)
        #expect(output.contains("open loop in stages 1s:100,1s:200,1s:0") && output.contains("thresholds:\n  errors<0.1%"), "\(output)")
    }

    /// --metrics-listen: while the run lasts, herald-load serves its own /metrics, which promtool
    /// accepts and which agrees with what Herald counted for the same requests.
    @Test func theFleetServesItsMetricsWhileItRuns() throws {
        let port = try HeraldProcesses.freePort()
        let log = herald.folder + "/fleet-metrics.log"
        let fleet = try HeraldProcesses.launch("herald-load", arguments: [
            "fleet", "--target", "http://127.0.0.1:\(herald.httpPort)", "--app", app, "--devices", "100", "--duration", "4", "--rate", "100",
            "--connections", "4", "--threads", "1", "--metrics-listen", "127.0.0.1:\(port)",
        ], log: log)
        defer { if fleet.isRunning { kill(fleet.processIdentifier, SIGKILL) } }
        let client = HTTPClient(port: port)
        var text = ""
        for _ in 0..<60 where fleet.isRunning {
            text = (try? client.request("GET", "/metrics").text) ?? ""
            if text.contains(#"herald_load_requests_total{method="registerDevice",result="ok"}"#) { break }
            usleep(100_000)
        }
        #expect(text.contains(#"herald_load_requests_total{method="registerDevice",result="ok"}"#), "\(text)")
        #expect(text.contains(#"herald_load_request_duration_seconds_bucket{method="registerDevice",le="+Inf"}"#), "\(text)")
        #expect(text.contains("herald_load_scheduled_rate 100"), "\(text)")
        try Promtool.expectClean(text)
        fleet.waitUntilExit()
        #expect(fleet.terminationStatus == 0, "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
    }

    /// Two generators, one fleet: `--segment 1/2` and `2/2` run at once, each registers its own half
    /// of the devices (together every device once, as Herald's table shows), and `merge` adds their
    /// results into the whole fleet's; `compare` reads both and refuses what is not a result.
    @Test func twoSegmentsMakeOneFleet() throws {
        let parts = (1...2).map { herald.folder + "/segment-\($0).json" }
        let common = ["--target", "http://127.0.0.1:\(herald.httpPort)", "--app", app, "--devices", "301", "--duration", "3",
                      "--rate", "200", "--connections", "6", "--threads", "1", "--seed", "21"]
        let log = herald.folder + "/segment-2.log"
        let second = try HeraldProcesses.launch("herald-load", arguments: ["fleet"] + common + ["--segment", "2/2", "--json", parts[1]], log: log)
        defer { if second.isRunning { kill(second.processIdentifier, SIGKILL) } }
        let (status, output) = try Self.fleet(common + ["--segment", "1/2", "--json", parts[0]])
        second.waitUntilExit()
        #expect(status == 0, "\(output)")
        #expect(second.terminationStatus == 0, "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        #expect(output.contains("segment 1/2: devices 0…149 of 301"), "\(output)")
        let first = try Self.results(parts[0]), other = try Self.results(parts[1])
        #expect(first["devices"] == 150 && other["devices"] == 151 && first["target_rate"]?.lenientDouble.map { abs($0 - 200.0 * 150 / 301) < 1e-9 } == true)
        #expect(first["segment"]?["first_device"] == 0 && other["segment"]?["first_device"] == 150)
        // Each device registered exactly once, by one part or the other.
        #expect(first["registered"] == 150 && other["registered"] == 151, "\(first) \(other)")
        #expect(try herald.count("SELECT COUNT(*) FROM devices") == 301)

        let merged = herald.folder + "/merged.json"
        let (mergeStatus, mergeOutput) = try Self.heraldLoad(["merge", parts[0], parts[1], "--json", merged, "--threshold", "errors<0.1%"])
        #expect(mergeStatus == 0, "\(mergeOutput)")
        #expect(mergeOutput.contains("merged: segments 1/2, 2/2 of 2 files") && mergeOutput.contains("thresholds:\n  errors<0.1%"), "\(mergeOutput)")
        let whole = try Self.results(merged)
        #expect(whole["devices"] == 301 && whole["registered"] == 301 && whole["merged_segments"] == ["1/2", "2/2"])
        let requests = (first["total"]?["requests"]?.lenientInt ?? 0) + (other["total"]?["requests"]?.lenientInt ?? 0)
        #expect(requests > 0 && whole["total"]?["requests"]?.lenientInt == requests)
        #expect(whole["target_rate"]?.lenientDouble.map { abs($0 - 200) < 1e-9 } == true)
        let seconds = whole["series"]?["end_s"]?.arrayValue?.count ?? 0
        #expect(seconds >= 3, "\(whole)")

        let (compareStatus, compareOutput) = try Self.heraldLoad(["compare", parts[0], merged, "--html", herald.folder + "/compare.html"])
        #expect(compareStatus == 0 || compareStatus == 1, "\(compareOutput)")
        #expect(compareOutput.contains("registerDevice") && compareOutput.contains("total"), "\(compareOutput)")
        let (refused, refusal) = try Self.heraldLoad(["compare", parts[0], herald.configPath])
        #expect(refused == 2 && refusal.contains("is not a herald-load fleet result"), "\(refusal)")
    }
}
