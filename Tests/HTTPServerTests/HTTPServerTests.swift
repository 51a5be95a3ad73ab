import Core
import Foundation
import HTTPServer
import SDKClient
import Synchronization
import TestSupport
import Testing

/// The HTTP/1.1 server on a loopback port, driven by SDKClient's keep-alive client.
@Suite struct HTTPServerTests {
    /// A server on a free loopback port that echoes the method, path, query (GET), `Authorization` and the body length.
    /// `edit` changes the settings further; `counters` receive the server's connection counts.
    func echoServer(maxBodyBytes: Int = 1024, counters: HTTPConnectionCounters = HTTPConnectionCounters(),
                    edit: (inout HTTPSettings) -> Void = { _ in }) throws -> HTTPServer {
        var settings = HTTPSettings()
        settings.port = 0
        settings.threads = 1
        settings.maxBodyBytes = maxBodyBytes
        edit(&settings)
        let server = HTTPServer(settings: settings, counters: counters) { request in
            .json(["method": .string(request.method), "path": .string(request.path), "query": .object(request.query.mapValues(JSON.string)),
                   "authorization": .string(request.header("Authorization") ?? ""), "length": .int(Int64(request.body.count))])
        }
        try server.start()
        return server
    }

    @Test func requestsOnOneKeptAliveConnectionAreEachAnswered() throws {
        let server = try echoServer()
        defer { server.stop() }
        let client = HTTPClient(port: server.port)
        for index in 0..<5 {
            let response = try client.request("POST", "/echo/\(index)", body: Array(repeating: 0x41, count: index * 10),
                                              headers: [("Authorization", "Token t-\(index)")])
            #expect(response.status == 200)
            let body = try JSON.parse(response.body)
            #expect(body["path"] == .string("/echo/\(index)"))
            #expect(body["authorization"] == .string("Token t-\(index)"))
            #expect(body["length"] == .int(Int64(index * 10)))
            let get = try JSON.parse(try client.request("GET", "/echo?a=\(index)").body)
            #expect(get["query"]?["a"] == .string("\(index)"))
        }
        let head = try client.request("HEAD", "/echo")
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(try client.request("GET", "/after-head").status == 200)
    }

    @Test func aBodyOverTheLimitIsRefusedWith413AndTheClientCarriesOn() throws {
        let server = try echoServer(maxBodyBytes: 100)
        defer { server.stop() }
        let client = HTTPClient(port: server.port)
        let refused = try client.request("POST", "/big", body: Array(repeating: 0x41, count: 5_000))
        #expect(refused.status == 413)
        #expect(try JSON.parse(refused.body)["error"] == "request body exceeds the limit of 100 bytes")
        let next = try client.request("POST", "/small", body: Array("ok".utf8))
        #expect(next.status == 200)
        #expect(try JSON.parse(next.body)["length"] == 2)
    }

    @Test func aPathMayHaveALargerBodyLimitThanTheRest() throws {
        var settings = HTTPSettings()
        settings.port = 0
        settings.threads = 1
        settings.maxBodyBytes = 100
        let server = HTTPServer(settings: settings, bodyLimit: { method, path in method == "PUT" && path.hasPrefix("/upload/") ? 10_000 : 100 }) {
            .json(["length": .int(Int64($0.body.count))])
        }
        try server.start()
        defer { server.stop() }
        let client = HTTPClient(port: server.port)
        #expect(try JSON.parse(try client.request("PUT", "/upload/a", body: Array(repeating: 1, count: 9_000)).body)["length"] == 9_000)
        let overUpload = try client.request("PUT", "/upload/a", body: Array(repeating: 1, count: 10_001))
        #expect(overUpload.status == 413)
        #expect(try JSON.parse(overUpload.body)["error"] == "request body exceeds the limit of 10000 bytes")
        #expect(try client.request("POST", "/upload/a", body: Array(repeating: 1, count: 101)).status == 413)
        #expect(try client.request("PUT", "/elsewhere", body: Array(repeating: 1, count: 101)).status == 413)
        #expect(try client.request("PUT", "/elsewhere", body: Array(repeating: 1, count: 100)).status == 200)
    }

    @Test func handlersSeeTheListedHeadersByLowerCaseNameTheFirstOfARepeatAndThePeer() throws {
        var settings = HTTPSettings()
        settings.port = 0
        settings.threads = 1
        let server = HTTPServer(settings: settings) { request in
            .json(["headers": .object(request.headers.dictionary.mapValues(JSON.string)), "peer": .string(request.clientAddress)])
        }
        try server.start()
        defer { server.stop() }
        let raw = "GET /h HTTP/1.1\r\nHost: x\r\nAUTHORIZATION: Token one\r\nauthorization: Token two\r\nX-Retry-Count: 3\r\n"
            + "Content-Typo: a\r\nX-Other: b\r\nIf-None-Match: \"v1\"\r\nConnection: close\r\n\r\n"
        let answer = try exchange(raw, port: server.port)
        let body = try JSON.parse(Array(answer[answer.range(of: "\r\n\r\n")!.upperBound...].utf8))
        #expect(body["headers"] == ["host": "x", "authorization": "Token one", "x-retry-count": "3", "if-none-match": "\"v1\""])
        #expect(body["peer"] == "127.0.0.1")
    }

    /// Sends `raw` on a new connection and returns everything the server sends until it closes (at
    /// most 3 s).
    func exchange(_ raw: String, port: UInt16) throws -> String {
        let connection = try RawConnection(port: port)
        connection.send(raw)
        return connection.readUntilClosed()
    }

    @Test func ambiguousFramingIsRefusedAndTheConnectionClosed() throws {
        let server = try echoServer()
        defer { server.stop() }
        let smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
        let shapes = [
            "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\nbody" + smuggled,
            "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled,
            "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: xchunked\r\n\r\n0\r\n\r\n" + smuggled,
            "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n" + smuggled,
            "GET /a HTTP/1.1\r\n\r\n",
        ]
        for raw in shapes {
            let answer = try exchange(raw, port: server.port)
            #expect(answer.hasPrefix("HTTP/1.1 400"), "\(raw.debugDescription) → \(answer.prefix(200).debugDescription)")
            #expect(!answer.contains("/smuggled"), "no second request was read from \(raw.debugDescription)")
            let statusLines = answer.matches(of: try Regex("HTTP/1\\.1 [0-9]{3} ")).count
            #expect(statusLines == 1, "exactly one answer, then the connection closed: \(answer.debugDescription)")
        }
        // A clean request on a fresh connection is still answered.
        #expect(try exchange("GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", port: server.port).hasPrefix("HTTP/1.1 200"))
    }
}
