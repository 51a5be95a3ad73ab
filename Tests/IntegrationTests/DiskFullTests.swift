import Foundation
import Core
import SDKClient
import SQLite
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The database's disk fills up under write load (a small tmpfs the test mounts): writes get 503 with
/// `Retry-After`, `/metrics` and `/healthz` tell the truth, one ERROR line names the failure, and
/// once space is freed ingest recovers without a restart, with every acknowledged write present.
@Suite(.serialized, .backends(.sqlite, reason: "a PostgreSQL server's failing commits are PostgresOutageTests'"))
struct DiskFullTests {
    @Test func aFullDiskIsReportedTruthfullyAndRecoveredFromWithoutLosingAcknowledgedWrites() throws {
        #expect(getuid() == 0, "mounting a tmpfs needs root; CI runs as root")
        let herald = try HeraldProcesses()
        let disk = herald.folder + "/disk"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        try runTool("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=4m", "tmpfs", disk])
        defer { _ = try? runTool("/usr/bin/umount", ["-l", disk]) }
        let config = try herald.writeConfig("disk.json") { $0["database"] = ["path": .string(disk + "/herald.sqlite")] }
        try herald.startIngest(config: config)

        // Leave little room, then write until the disk is full.
        let filler = disk + "/filler"
        try runTool("/usr/bin/dd", ["if=/dev/zero", "of=\(filler)", "bs=64k", "count=40"])
        let client = DeviceAPIClient(port: herald.httpPort)
        var acknowledged: [String] = []
        var refused: HTTPClient.Response?
        let tags: JSON = ["Bio": .string(String(repeating: "x", count: 2_000))]
        // A registration whose tags need new pages.
        func register(_ hwid: String) throws -> HTTPClient.Response {
            var request = SDKRequests.registerDevice(app: HeraldProcesses.appCode, SDKDevice(hwid, platform: 1))
            if case .object(var members) = request {
                members["tags"] = tags
                request = .object(members)
            }
            let response = try client.http.request("POST", "/json/1.3/registerDevice", body: JSON.object(["request": request]).encoded(),
                                                   headers: [("Content-Type", "application/json")])
            if response.status == 200 { acknowledged.append(hwid) }
            return response
        }
        for index in 0..<5_000 {
            let response = try register("disk-\(index)")
            if response.status != 200 {
                refused = response
                break
            }
        }
        let full = try #require(refused, "the disk never filled")
        #expect(full.status == 503 && full.headers["retry-after"] != nil, "\(full.status) \(full.headers)")
        // Take the last bytes too (dd stops at ENOSPC, which it reports as a failure). A small commit
        // (the dispatcher's renewal) can still succeed in space the WAL already has, and /healthz
        // follows the last commit: so each round fails a registration's commit again, and the checks
        // take a /healthz answer and the log after it that agree.
        _ = try? runTool("/usr/bin/dd", ["if=/dev/zero", "of=\(disk)/filler-rest", "bs=4k"])
        var health: HTTPClient.Response?
        var spells: [Substring] = []
        var round = 0
        try waitUntil("/healthz and the log report the failing commits", timeout: 10) {
            round += 1
            _ = try register("disk-full-\(round)")
            let answer = try herald.client.request("GET", "/healthz")
            spells = herald.log().split(separator: "\n").filter {
                $0.contains("database commits are failing") || $0.contains("database commits succeed again")
            }
            health = answer
            return answer.status == 503 && spells.last?.contains("database commits are failing") == true
        }
        let degraded = try #require(health)
        #expect(degraded.text.contains("degraded"), "\(degraded.text)")
        #expect(degraded.headers["retry-after"] != nil)
        // /metrics counts what the client got: a 503, not the 200 the handler had produced.
        let metrics = try herald.client.request("GET", "/metrics").text
        #expect(metrics.contains(#"herald_http_requests_total{route="registerDevice",status="503",code="503"}"#), "\(metrics)")
        // One ERROR line per failing spell, not one per request: each spell but the last is ended
        // by a recovery line.
        let errorLines = spells.filter { $0.contains(" ERROR ") && $0.contains("database commits are failing") }
        #expect(errorLines.count == 1 + spells.filter { $0.contains("database commits succeed again") }.count, "\(errorLines)")

        // Space comes back: the next writes succeed, without a restart.
        try FileManager.default.removeItem(atPath: filler)
        try FileManager.default.removeItem(atPath: disk + "/filler-rest")
        try client.ok("registerDevice", SDKRequests.registerDevice(app: HeraldProcesses.appCode, SDKDevice("after", platform: 3)))
        #expect(try herald.client.request("GET", "/healthz").status == 200)
        #expect(herald.log().contains("database commits succeed again"))

        // Every acknowledged registration is in the database.
        herald.stopIngest()
        let connection = try SQLiteConnection(path: disk + "/herald.sqlite", busyTimeoutMilliseconds: 2_000, readOnly: true)
        defer { connection.close() }
        let stored = Set(try connection.prepare("SELECT hwid FROM devices").rows([]) { $0.text(0) })
        #expect(acknowledged.count > 10)
        #expect(acknowledged.allSatisfy { stored.contains($0) }, "\(acknowledged.filter { !stored.contains($0) }.count) acknowledged devices missing")
        #expect(stored.contains("after"))
    }
}
