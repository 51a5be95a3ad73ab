import Core
import Foundation
import HTTPServer
import SDKClient
import TestSupport
import Testing

/// Deadlines and the connection limit, against clients on real loopback sockets.
extension HTTPServerTests {
    /// Sends `connection` one byte of `bytes` every `interval` seconds until the server closes it
    /// or `seconds` pass; returns whether the server closed it.
    func trickle(_ bytes: String, on connection: RawConnection, every interval: Double, for seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        for byte in bytes.utf8 where Date() < deadline {
            if connection.isClosedByServer || !connection.send([byte]) { return true }
            Thread.sleep(forTimeInterval: interval)
        }
        while Date() < deadline {
            if connection.isClosedByServer { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    @Test func headersTrickledAByteAtATimeAreCutOffAtTheHeaderDeadline() throws {
        let counters = HTTPConnectionCounters()
        let server = try echoServer(counters: counters) {
            $0.headerTimeoutSeconds = 1
            $0.idleTimeoutSeconds = 60
        }
        defer { server.stop() }
        let slow = try RawConnection(port: server.port)
        // Every byte would reset the idle timeout; the header deadline still holds.
        let headers = "GET /slow HTTP/1.1\r\nHost: x\r\n" + String(repeating: "X-Padding: aaaaaaaaaa\r\n", count: 10) + "\r\n"
        #expect(trickle(headers, on: slow, every: 0.2, for: 8))
        #expect(counters.snapshot.cutHeaders == 1)
        // Others are served as before.
        #expect(try HTTPClient(port: server.port).request("GET", "/fresh").status == 200)
    }

    @Test func aBodyTricklingBelowTheMinimumRateIsCutOffAtTheBodyDeadline() throws {
        let counters = HTTPConnectionCounters()
        let server = try echoServer(counters: counters) {
            $0.bodyTimeoutSeconds = 1
            $0.bodyMinBytesPerSecond = 500
        }
        defer { server.stop() }
        let slow = try RawConnection(port: server.port)
        slow.send("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        #expect(trickle(String(repeating: "b", count: 100), on: slow, every: 0.2, for: 8))
        #expect(counters.snapshot.cutBody == 1)
        #expect(counters.snapshot.cutHeaders == 0)
    }

    @Test func aLargeBodyArrivingAtAGoodRateOutlivesTheBodyDeadline() throws {
        let counters = HTTPConnectionCounters()
        let server = try echoServer(maxBodyBytes: 1_048_576, counters: counters) {
            $0.bodyTimeoutSeconds = 1
            $0.bodyMinBytesPerSecond = 500
        }
        defer { server.stop() }
        let client = try RawConnection(port: server.port)
        let chunk = [UInt8](repeating: 0x61, count: 8192)
        let chunks = 16
        client.send("POST /large HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: \(chunk.count * chunks)\r\n\r\n")
        // About 3 s for the whole body, three times the deadline, at about 40 KB/s.
        for _ in 0..<chunks {
            #expect(client.send(chunk))
            Thread.sleep(forTimeInterval: 0.2)
        }
        let answer = client.readUntilClosed()
        #expect(answer.hasPrefix("HTTP/1.1 200"), "\(answer.prefix(200).debugDescription)")
        #expect(answer.contains("\"length\":\(chunk.count * chunks)"))
        #expect(counters.snapshot.cutBody == 0)
    }

    @Test func atTheLimitNewConnectionsPushOutThoseStillWaitingForHeaders() throws {
        let counters = HTTPConnectionCounters()
        let server = try echoServer(counters: counters) {
            $0.threads = 2
            $0.connectionLimit = 16
            $0.headerTimeoutSeconds = 60
        }
        defer { server.stop() }
        // Three times the limit, each with a request line and no end to its headers.
        var slow: [RawConnection] = []
        for _ in 0..<48 {
            let connection = try RawConnection(port: server.port)
            connection.send("GET /slow HTTP/1.1\r\nHost: x\r\n")
            slow.append(connection)
        }
        let started = Date()
        let fresh = try HTTPClient(port: server.port).request("GET", "/fresh", timeoutSeconds: 5)
        let waited = Date().timeIntervalSince(started)
        #expect(fresh.status == 200)
        print("a fresh client beside 48 slow ones (limit 16) was answered in \(Int(waited * 1000)) ms")
        // Every slow connection is accepted in the end; on a loaded machine the last ones may wait
        // in the listen backlog for a while.
        let deadline = Date().addingTimeInterval(20)
        while counters.snapshot.evicted < 33, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(counters.snapshot.evicted >= 33, "48 + 1 connections for 16 slots")
        // The newest slow connections kept their slots; the oldest were shut down.
        #expect(slow.first?.isClosedByServer == true)
        #expect(slow.last?.isClosedByServer == false)
    }

    @Test func whenEverySlotHoldsARequestInProgressANewRequestGets503WithRetryAfter() throws {
        let counters = HTTPConnectionCounters()
        let server = try echoServer(counters: counters) {
            $0.connectionLimit = 4
            $0.bodyTimeoutSeconds = 60
        }
        defer { server.stop() }
        // Four uploads in progress: `100 Continue` shows the server has read each one's headers.
        var uploads: [RawConnection] = []
        for index in 0..<4 {
            let upload = try RawConnection(port: server.port)
            upload.send("POST /upload/\(index) HTTP/1.1\r\nHost: x\r\nConnection: close\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")
            #expect(upload.readHead().hasPrefix("HTTP/1.1 100"))
            upload.send("ab")
            uploads.append(upload)
        }
        let refused = try exchange("GET /fresh HTTP/1.1\r\nHost: x\r\n\r\n", port: server.port)
        #expect(refused.hasPrefix("HTTP/1.1 503"), "\(refused.prefix(300).debugDescription)")
        #expect(refused.contains("Retry-After: 1\r\n"))
        #expect(refused.lowercased().contains("connection: close\r\n"))
        #expect(counters.snapshot.refused == 1)
        #expect(counters.snapshot.evicted == 0)
        // The uploads finish unharmed, and then there is room again.
        for upload in uploads {
            upload.send("cd")
            #expect(upload.readUntilClosed().contains("\"length\":4"))
        }
        #expect(try exchange("GET /after HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", port: server.port).hasPrefix("HTTP/1.1 200"))
        #expect(counters.snapshot.refused == 1)
    }
}
