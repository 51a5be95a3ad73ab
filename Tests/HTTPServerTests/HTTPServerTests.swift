import Core
import HTTPServer
import SDKClient
import Synchronization
import Testing

/// The HTTP/1.1 server on a loopback port, driven by SDKClient's keep-alive client.
@Suite struct HTTPServerTests {
    /// A server on a free loopback port that echoes the method, path, query (GET), `Authorization` and the body length.
    func echoServer(maxBodyBytes: Int = 1024) throws -> HTTPServer {
        var settings = HTTPSettings()
        settings.port = 0
        settings.threads = 1
        settings.maxBodyBytes = maxBodyBytes
        let server = HTTPServer(settings: settings) { request in
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
}
