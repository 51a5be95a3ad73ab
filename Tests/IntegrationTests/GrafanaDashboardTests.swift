import Foundation
import Core
import SDKClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// ops/grafana/herald.json and ops/prometheus/herald.yml, checked the way they can be without
/// Grafana: Debian's Prometheus, with the shipped scrape configuration pointed at a running Herald
/// (delivering to the edge) and a running herald-load fleet, evaluates every panel's query through
/// its HTTP API, and each returns data.
extension EdgeTests {
    @Test mutating func everyDashboardPanelReturnsData() throws {
        let prometheusBinary = "/usr/bin/prometheus"
        try #require(FileManager.default.isExecutableFile(atPath: prometheusBinary),
                     "Debian's prometheus is not installed (ops/install-deps --test installs it)")
        let settings = try startEdge([])
        defer { stopEdge() }
        try startHerald(edge: settings)
        _ = try herald.waitForMessage(try herald.send(["send_date": "now", "content": "Dashboard"]), timeout: 30)
        // A refusal, for the refusals panel: an app Herald does not know.
        _ = try herald.client.request("POST", "/json/1.3/getTags", body: Array(#"{"request":{"application":"ZZZZZ-00000","hwid":"x"}}"#.utf8))

        let loadPort = try HeraldProcesses.freePort()
        let fleet = try HeraldProcesses.launch("herald-load", arguments: [
            "fleet", "--target", "http://127.0.0.1:\(herald.httpPort)", "--app", HeraldProcesses.appCode, "--devices", "200",
            "--duration", "120", "--rate", "40", "--connections", "2", "--threads", "1", "--metrics-listen", "127.0.0.1:\(loadPort)", "-q",
        ], log: herald.folder + "/dashboard-fleet.log")
        defer {
            kill(fleet.processIdentifier, SIGKILL)
            fleet.waitUntilExit()
        }

        // The shipped scrape configuration, pointed at this test's ports and scraping every second.
        let shipped = try String(contentsOfFile: Repository.root + "/ops/prometheus/herald.yml", encoding: .utf8)
        let config = shipped.replacingOccurrences(of: "127.0.0.1:8080", with: "127.0.0.1:\(herald.httpPort)")
            .replacingOccurrences(of: "127.0.0.1:9464", with: "127.0.0.1:\(loadPort)")
            .replacingOccurrences(of: "scrape_interval: 5s", with: "scrape_interval: 1s")
        #expect(config != shipped)
        let configPath = herald.folder + "/prometheus.yml"
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        let prometheusPort = try HeraldProcesses.freePort()
        let prometheus = Process()
        prometheus.executableURL = URL(fileURLWithPath: prometheusBinary)
        prometheus.arguments = ["--config.file=\(configPath)", "--storage.tsdb.path=\(herald.folder)/prometheus-data",
                                "--web.listen-address=127.0.0.1:\(prometheusPort)"]
        #expect(FileManager.default.createFile(atPath: herald.folder + "/prometheus.log", contents: nil))
        let prometheusLog = try FileHandle(forWritingTo: URL(fileURLWithPath: herald.folder + "/prometheus.log"))
        prometheus.standardOutput = prometheusLog
        prometheus.standardError = prometheusLog
        try prometheus.run()
        defer {
            kill(prometheus.processIdentifier, SIGTERM)
            prometheus.waitUntilExit()
        }

        let dashboard = try JSON.parse(Data(contentsOf: URL(fileURLWithPath: Repository.root + "/ops/grafana/herald.json")))
        let panels = try #require(dashboard["panels"]?.arrayValue)
        var queries: [(panel: String, expr: String)] = []
        for panel in panels {
            for target in panel["targets"]?.arrayValue ?? [] {
                queries.append((panel["title"]?.stringValue ?? "?", try #require(target["expr"]?.stringValue)))
            }
        }
        #expect(panels.count >= 12 && queries.count >= panels.count)
        let client = HTTPClient(port: prometheusPort)
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        /// The query's result series (nil when Prometheus is not answering yet or refuses the query).
        func evaluate(_ expr: String) -> [JSON]? {
            let encoded = expr.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
            guard let response = try? client.request("GET", "/api/v1/query?query=\(encoded)"), response.status == 200,
                  let body = try? JSON.parse(response.body), body["status"] == "success" else { return nil }
            return body["data"]?["result"]?.arrayValue
        }
        // Each panel's query returns data once both targets were scraped a few times (at most 60 s).
        var empty = queries
        let deadline = Date().addingTimeInterval(60)
        while !empty.isEmpty && Date() < deadline {
            empty = empty.filter { (evaluate($0.expr)?.count ?? 0) == 0 }
            if !empty.isEmpty { usleep(1_000_000) }
        }
        #expect(empty.isEmpty, "panels without data: \(empty.map { "\($0.panel): \($0.expr)" })")
        // Every query is valid PromQL (a refused one would have been reported above as well).
        for query in queries { #expect(evaluate(query.expr) != nil, "\(query.panel): \(query.expr)") }
    }
}
