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

    func value(_ text: String, _ prefix: String) -> Double? {
        text.split(separator: "\n").first { $0.hasPrefix(prefix + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    /// Resident memory of process `pid` as /proc shows it.
    func residentBytes(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        return try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
            .flatMap { Int($0.split(separator: " ", omittingEmptySubsequences: true)[1]) }) * 1024
    }

    @Test func workersReportTheirPushesThroughIngest() throws {
        let began = Date().timeIntervalSince1970.rounded(.down) - 1
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
            if text.contains(#"outcome="throttled"} 6"#) && metric(text, "herald_messages_done_total") == 2 { break }
            usleep(100_000)
        }
        // Outside a systemd template unit and without --name, a worker is named after its host.
        let host = try HeraldProcesses.machineHostName()
        let name = host
        #expect(metric(text, #"herald_worker_jobs_in_flight{worker="\#(name)"}"#) != nil, "\(text)")
        #expect(metric(text, #"herald_pushes_total{worker="\#(name)",provider="sink",outcome="sent"}"#) == 6)
        #expect(metric(text, #"herald_pushes_total{worker="\#(name)",provider="none",outcome="throttled"}"#) == 6)
        #expect(metric(text, #"herald_reports_recorded_total{method="postEvent"}"#) == 1)
        #expect(metric(text, #"herald_messages{status="sending"}"#) == 0)
        #expect(metric(text, #"herald_shards{status="pending"}"#) == 0)
        // The dispatching ingest's housekeeping: both messages started and finished, no lease lost.
        #expect(metric(text, "herald_messages_started_total") == 2, "\(text)")
        #expect(metric(text, "herald_messages_done_total") == 2, "\(text)")
        #expect(metric(text, "herald_shard_leases_released_total") == 0, "\(text)")
        #expect(metric(text, "herald_workers_connected") == 1)
        // The worker is listed with its host (this machine) and where its heartbeats come from: over
        // the tests' IPC endpoints, the worker process's credentials.
        let workerPID = try #require(herald.workers.first?.processIdentifier)
        let id = try #require(HeraldProcesses.workerInfo(text).first?.id)
        #expect(id.hasPrefix("\(host)-\(workerPID)-") && id.wholeMatch(of: #/.+-[0-9]+-[0-9a-f]{4}/#) != nil, "\(id)")
        #expect(text.contains("# TYPE herald_worker_info gauge\n"))
        #expect(HeraldProcesses.workerInfo(text).map { [$0.worker, $0.id, $0.host, $0.address] }
            == [[name, id, host, "localhost:\(getuid()):\(getgid()):\(workerPID)"]], "\(text)")
        // The worker's process, through its heartbeats: CPU time, memory as /proc shows it, its start.
        let now = Date().timeIntervalSince1970 + 1
        #expect((value(text, #"herald_worker_cpu_seconds_total{worker="\#(name)"}"#) ?? 0) > 0, "\(text)")
        let workerResident = try #require(metric(text, #"herald_worker_resident_memory_bytes{worker="\#(name)"}"#))
        let workerRSS = try residentBytes(workerPID)
        #expect(workerResident > workerRSS / 2 && workerResident < workerRSS * 2, "\(workerResident) bytes reported, VmRSS \(workerRSS)")
        let workerStart = try #require(value(text, #"herald_worker_start_time_seconds{worker="\#(name)"}"#))
        #expect(workerStart >= began && workerStart <= now, "\(workerStart) not in \(began)...\(now)")
        // Ingest's own: the build, CPU time, start.
        let version = try String(contentsOfFile: Repository.root + "/VERSION", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(text.contains("\nherald_build_info{version=\"\(version)\",commit=\""), "\(text)")
        #expect((value(text, "process_cpu_seconds_total") ?? 0) > 0)
        let ingestStart = try #require(value(text, "process_start_time_seconds"))
        #expect(ingestStart >= began && ingestStart <= now, "\(ingestStart) not in \(began)...\(now)")
        // Ingest's own request durations, by route and status class: every registration is in them.
        #expect(metric(text, #"herald_http_request_duration_seconds_count{route="registerDevice",status_class="2xx"}"#) == 6, "\(text)")
        #expect(metric(text, #"herald_http_request_duration_seconds_bucket{route="registerDevice",status_class="2xx",le="+Inf"}"#) == 6)
        #expect((value(text, #"herald_http_request_duration_seconds_sum{route="registerDevice",status_class="2xx"}"#) ?? 0) > 0)
        // Retryable store failures are named for the backend that has them.
        let busy = herald.databaseURL == nil ? "herald_sqlite_busy_total" : "herald_postgres_unavailable_total"
        let other = herald.databaseURL == nil ? "herald_postgres_unavailable_total" : "herald_sqlite_busy_total"
        #expect(metric(text, busy) == 0 && !text.contains(other), "\(text)")
        try Promtool.expectClean(text)
        // Ingest names itself as workers do: its host, its pid and 4 hex digits drawn at start, so
        // that two ingests in containers with equal host names and pids never share the dispatcher
        // role's name. /healthz, /metrics and the dashboard show it.
        let ingestPID = try #require(herald.ingest?.processIdentifier)
        let ingestID = try #require(JSON.parse(herald.client.request("GET", "/healthz").body)["ingest"]?.stringValue)
        #expect(ingestID.hasPrefix("\(host)-\(ingestPID)-") && ingestID.wholeMatch(of: #/.+-[0-9]+-[0-9a-f]{4}/#) != nil, "\(ingestID)")
        #expect(text.contains("\nherald_dispatcher{ingest=\"\(ingestID)\"} 1\n"), "\(text)")
        #expect(try herald.dashboardPage().contains("this ingest, \(ingestID)"))

        // Memory: the process's resident set as /proc shows it, and SQLite's part of it.
        let vmRSS = try residentBytes(try #require(herald.ingest?.processIdentifier))
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
    /// address; two workers on one host are two workers. A worker's series carry its `--name`
    /// across restarts; two workers giving the same name are told apart by their pids.
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
        let pids = listed.compactMap { $0.id.wholeMatch(of: #/.+-([0-9]+)-[0-9a-f]{4}/#).map { Int32($0.output.1) } ?? nil }
        #expect(Set(pids) == Set(herald.workers.map(\.processIdentifier)), "\(listed)")
        #expect(Set(listed.map(\.worker)) == Set(herald.workers.map { "\(host)-\($0.processIdentifier)" }), "\(listed)")
        #expect(metric(text, "herald_workers_connected") == 2)
        try Promtool.expectClean(text)

        // A third worker with --name keeps that label when it restarts, under a new id.
        try herald.startWorker(config: config, arguments: ["--name", "edge-box-1"])
        let named = try herald.waitForMetrics(timeout: 10) { HeraldProcesses.workerInfo($0).contains { $0.worker == "edge-box-1" } }
        let firstID = try #require(HeraldProcesses.workerInfo(named).first { $0.worker == "edge-box-1" }?.id)
        let third = try #require(herald.workers.last)
        kill(third.processIdentifier, SIGTERM)
        third.waitUntilExit()
        try herald.startWorker(config: config, arguments: ["--name", "edge-box-1"])
        let again = try herald.waitForMetrics(timeout: 15) { metrics in
            HeraldProcesses.workerInfo(metrics).contains { $0.worker == "edge-box-1" && $0.id != firstID }
        }
        #expect(HeraldProcesses.workerInfo(again).filter { $0.worker == "edge-box-1" }.count == 1, "\(again)")
        // A name a label cannot carry is refused at start.
        let (status, output) = try HeraldProcesses.runToCompletion("herald-worker", arguments: ["--config", config, "--name", "a b"], limit: 10)
        #expect(status == 2 && output.contains("--name"), "\(output)")
    }
}
