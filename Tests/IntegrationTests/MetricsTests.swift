import Foundation
import Core
import SDKClient
import TestSupport
import Testing

/// `/metrics` as an operator scrapes it: requests, stored reports, queue depth, and the workers'
/// pushes by provider and outcome.
@Suite(.serialized) struct MetricsTests {
    func metric(_ text: String, _ prefix: String) -> Int? {
        text.split(separator: "\n").first { $0.hasPrefix(prefix + " ") }.flatMap { Int($0.split(separator: " ").last ?? "") }
    }

    @Test func workersReportTheirPushesThroughIngest() throws {
        let herald = try HeraldProcesses(throttle: (count: 1, windowSeconds: 3600))
        try herald.startIngest()
        for index in 0..<6 { try herald.register(SDKDevice("m-\(index)", platform: index % 2 == 0 ? 1 : 3)) }
        try herald.ok("postEvent", ["application": .string(HeraldProcesses.appCode), "hwid": "m-0", "event": "Opened", "attributes": [:]])
        try herald.startWorker()
        try herald.waitForWorkers(1)
        let first = try herald.send(["content": "one"])
        _ = try herald.waitForMessage(first)
        let second = try herald.send(["content": "two"])  // everyone is capped at 1 per hour now
        _ = try herald.waitForMessage(second)

        var text = ""
        for _ in 0..<50 {  // the counters ride on the next heartbeat (every second)
            text = try herald.client.request("GET", "/metrics").text
            if text.contains(#"outcome="throttled"} 6"#) { break }
            usleep(100_000)
        }
        let worker = try #require(text.split(separator: "\n").first { $0.hasPrefix("herald_worker_jobs_in_flight{") })
        let id = String(worker.split(separator: "\"")[1])
        #expect(metric(text, #"herald_pushes_total{worker="\#(id)",provider="sink",outcome="sent"}"#) == 6)
        #expect(metric(text, #"herald_pushes_total{worker="\#(id)",provider="none",outcome="throttled"}"#) == 6)
        #expect(metric(text, #"herald_reports_recorded_total{method="postEvent"}"#) == 1)
        #expect(metric(text, #"herald_messages{status="sending"}"#) == 0)
        #expect(metric(text, #"herald_shards{status="pending"}"#) == 0)
        #expect(metric(text, "herald_workers_connected") == 1)
        // The worker is listed with its host (this machine) and where its heartbeats come from: over
        // the tests' IPC endpoints, the worker process's credentials.
        let workerPID = try #require(herald.workers.first?.processIdentifier)
        let host = try HeraldProcesses.machineHostName()
        #expect(id.hasPrefix("\(host)-\(workerPID)-") && id.wholeMatch(of: #/.+-[0-9]+-[0-9a-f]{4}/#) != nil, "\(id)")
        #expect(text.contains("# TYPE herald_worker_info gauge\n"))
        #expect(HeraldProcesses.workerInfo(text).map { [$0.worker, $0.host, $0.address] } == [[id, host, "localhost:\(getuid()):\(getgid()):\(workerPID)"]],
                "\(text)")
        #expect(metric(text, "herald_sqlite_busy_total") == 0)
        // Ingest names itself as workers do: its host, its pid and 4 hex digits drawn at start, so
        // that two ingests in containers with equal host names and pids never share the dispatcher
        // role's name. /healthz, /metrics and the dashboard show it.
        let ingestPID = try #require(herald.ingest?.processIdentifier)
        let ingestID = try #require(JSON.parse(herald.client.request("GET", "/healthz").body)["ingest"]?.stringValue)
        #expect(ingestID.hasPrefix("\(host)-\(ingestPID)-") && ingestID.wholeMatch(of: #/.+-[0-9]+-[0-9a-f]{4}/#) != nil, "\(ingestID)")
        #expect(text.contains("\nherald_dispatcher{ingest=\"\(ingestID)\"} 1\n"), "\(text)")
        #expect(try herald.dashboardPage().contains("this ingest, \(ingestID)"))

        // Memory: the process's resident set as /proc shows it, and SQLite's part of it.
        let pid = try #require(herald.ingest?.processIdentifier)
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let vmRSS = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
            .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true)[1]) }) * 1024
        let resident = try #require(metric(text, "process_resident_memory_bytes"))
        let sqlite = try #require(metric(text, "herald_store_memory_bytes"))
        #expect(resident > vmRSS / 2 && resident < vmRSS * 2, "\(resident) bytes reported, VmRSS \(vmRSS)")
        if herald.databaseURL == nil {
            #expect(sqlite > 0 && sqlite < resident, "\(sqlite) of \(resident)")
        } else {
            #expect(sqlite == 0, "PostgreSQL's memory is the server's, not Herald's")
        }
    }

    /// Over TCP, as workers on other hosts connect, each worker is listed with its host and its IP
    /// address; two workers on one host are two workers.
    @Test func everyWorkerIsListedWithItsHostAndAddress() throws {
        let herald = try HeraldProcesses()
        let (jobs, results) = (try HeraldProcesses.freePort(), try HeraldProcesses.freePort())
        let config = try herald.writeConfig("tcp.json") {
            $0["queue"] = ["jobs": .string("tcp://127.0.0.1:\(jobs)"), "results": .string("tcp://127.0.0.1:\(results)")]
        }
        try herald.startIngest(config: config)
        for _ in 0..<2 { try herald.startWorker(config: config) }
        try herald.waitForWorkers(2)
        let text = try herald.waitForMetrics { HeraldProcesses.workerInfo($0).count == 2 }
        let host = try HeraldProcesses.machineHostName()
        let listed = HeraldProcesses.workerInfo(text)
        #expect(listed.map(\.host) == [host, host] && listed.map(\.address) == ["127.0.0.1", "127.0.0.1"], "\(text)")
        let pids = listed.compactMap { $0.worker.wholeMatch(of: #/.+-([0-9]+)-[0-9a-f]{4}/#).map { Int32($0.output.1) } ?? nil }
        #expect(Set(pids) == Set(herald.workers.map(\.processIdentifier)), "\(listed)")
        #expect(metric(text, "herald_workers_connected") == 2)
    }
}
