import Foundation
import Core
import SDKClient
import TestSupport
import Testing

/// herald-ingest against slow clients (slowloris): the header and body deadlines and the connection
/// limit keep it answering everyone else, and /metrics shows what it did.
@Suite(.backends(.sqlite, reason: "the deadlines and the connection limit are the HTTP server's; the database plays no part"))
struct SlowClientTests {
    func metric(_ text: String, _ name: String) -> Int? {
        text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Int($0.split(separator: " ").last ?? "") }
    }

    /// Starts ingest with `http` keys set on top of the test configuration.
    func startIngest(_ http: [String: JSON]) throws -> HeraldProcesses {
        let herald = try HeraldProcesses()
        let config = try herald.writeConfig("edge.json") { members in
            guard case .object(var settings)? = members["http"] else { return }
            settings.merge(http) { _, new in new }
            members["http"] = .object(settings)
        }
        try herald.startIngest(config: config)
        return herald
    }

    @Test func aFreshClientIsServedWhileMoreSlowClientsThanTheLimitTrickleABytePerSecond() throws {
        let herald = try startIngest(["connection_limit": 64, "header_timeout_seconds": 3, "body_timeout_seconds": 3,
                                      "idle_timeout_seconds": 60])
        // 100 slow clients for 64 slots: 80 trickle their headers, 20 a registerDevice body.
        var slow: [(connection: RawConnection, rest: [UInt8])] = []
        for index in 0..<100 {
            let connection = try RawConnection(port: herald.httpPort)
            if index < 80 {
                connection.send("POST /json/1.3/registerDevice HTTP/1.1\r\n")
                slow.append((connection, Array("Host: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}".utf8)))
            } else {
                connection.send("POST /json/1.3/registerDevice HTTP/1.1\r\nHost: x\r\nContent-Length: 200\r\n\r\n{")
                slow.append((connection, [UInt8](repeating: 0x20, count: 199)))
            }
        }
        let started = Date()
        let health = try herald.client.request("GET", "/healthz", timeoutSeconds: 5)
        let waited = Date().timeIntervalSince(started)
        #expect(health.status == 200)
        print("herald-ingest answered /healthz in \(Int(waited * 1000)) ms beside 100 slow clients (limit 64)")

        // A byte a second each (every byte would reset an idle timeout) until the server has shut them all.
        let deadline = Date().addingTimeInterval(10)
        var open = slow.indices.map { _ in true }
        while open.contains(true), Date() < deadline {
            for index in slow.indices where open[index] {
                let byte = slow[index].rest.isEmpty ? [] : [slow[index].rest.removeFirst()]
                if slow[index].connection.isClosedByServer || (!byte.isEmpty && !slow[index].connection.send(byte)) {
                    open[index] = false
                }
            }
            Thread.sleep(forTimeInterval: 1)
        }
        #expect(!open.contains(true), "\(open.filter { $0 }.count) slow clients still connected after 10 s")

        // The sockets are shut down; ingest closes them on its next turn.
        var text = try herald.client.request("GET", "/metrics").text
        let settled = Date().addingTimeInterval(3)
        while (metric(text, "herald_http_connections_open") ?? 0) > 2, Date() < settled {
            Thread.sleep(forTimeInterval: 0.1)
            text = try herald.client.request("GET", "/metrics").text
        }
        let headers = metric(text, #"herald_http_connections_cut_total{deadline="headers"}"#) ?? 0
        let evicted = metric(text, "herald_http_connections_evicted_total") ?? 0
        #expect(metric(text, #"herald_http_connections_cut_total{deadline="body"}"#) == 20)
        #expect(evicted >= 36, "100 slow clients and one fresh for 64 slots")
        #expect(headers + evicted == 80 || headers + evicted == 81, "every header trickler cut or evicted (one more if the fresh client's idle connection was)")
        #expect(metric(text, "herald_http_connections_refused_total") == 0)
        #expect((metric(text, "herald_http_connections_open") ?? 0) <= 2)
    }

    @Test func whenEverySlotHoldsAnUploadANewRequestGets503WithRetryAfter() throws {
        let herald = try startIngest(["connection_limit": 2, "body_timeout_seconds": 60])
        let body = Array(#"{"request": {"application": "\#(HeraldProcesses.appCode)", "hwid": "slow-1", "device_type": 3, "push_token": "t"}}"#.utf8)
        // Two uploads in progress; `100 Continue` shows ingest has read an upload's headers, so it
        // holds its slot. A health check from start-up still in progress on a loaded machine may
        // hold a slot for a moment and get an upload refused: then start over (bounded).
        var uploads: [RawConnection] = []
        var refusedUploads = 0
        for _ in 0..<20 where uploads.count < 2 {
            uploads = []
            for _ in 0..<2 {
                let upload = try RawConnection(port: herald.httpPort)
                upload.send("POST /json/1.3/registerDevice HTTP/1.1\r\nHost: x\r\nConnection: close\r\nExpect: 100-continue\r\n"
                            + "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n")
                guard upload.readHead(seconds: 3).hasPrefix("HTTP/1.1 100") else {
                    refusedUploads += 1
                    Thread.sleep(forTimeInterval: 0.5)
                    break
                }
                upload.send(Array(body.prefix(10)))
                uploads.append(upload)
            }
        }
        try #require(uploads.count == 2)
        let refused = try RawConnection(port: herald.httpPort)
        refused.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let answer = refused.readUntilClosed()
        #expect(answer.hasPrefix("HTTP/1.1 503"), "\(answer.prefix(300).debugDescription)")
        #expect(answer.contains("Retry-After: 1\r\n"))
        for upload in uploads {
            upload.send(Array(body.dropFirst(10)))
            #expect(upload.readUntilClosed().hasPrefix("HTTP/1.1 200"))
        }
        let text = try herald.client.request("GET", "/metrics").text
        #expect(metric(text, "herald_http_connections_refused_total") == refusedUploads + 1)
    }
}
