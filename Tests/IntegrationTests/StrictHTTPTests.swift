import Foundation
import Core
import SDKClient
import TestSupport
import Testing

/// herald-ingest's HTTP edge against request heads no HTTP client writes, on raw loopback sockets:
/// each is answered 400 and the connection closed, no write inside it happens, and nothing pipelined
/// behind it is served.
@Suite(.serialized) struct StrictHTTPTests {
    let herald: HeraldProcesses
    static let app = JSON.string(HeraldProcesses.appCode)

    init() throws {
        herald = try HeraldProcesses()
        try herald.startIngest()
    }

    /// Sends `bytes` on a new connection; returns what came back and whether the server closed it.
    func exchange(_ bytes: [UInt8]) throws -> (text: String, closed: Bool) {
        let connection = try RawConnection(port: herald.httpPort)
        connection.send(bytes)
        return connection.readAnswer()
    }

    func expectOneRefusal(_ answer: (text: String, closed: Bool), status: Int = 400, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(answer.text.hasPrefix("HTTP/1.1 \(status) "), "\(answer.text.prefix(300).debugDescription)", sourceLocation: sourceLocation)
        #expect(answer.text.matches(of: try Regex("HTTP/1\\.[01] [0-9]{3} ")).count == 1, "one answer: \(answer.text.debugDescription)",
                sourceLocation: sourceLocation)
        #expect(answer.closed, "the connection is closed", sourceLocation: sourceLocation)
    }

    func registerDevice(_ hwid: String) -> [UInt8] {
        JSON.object(["request": ["application": Self.app, "hwid": .string(hwid), "device_type": 1, "push_token": .string("t-\(hwid)"),
                                 "tags": ["Smuggled": 1]]]).encoded()
    }

    func tags(_ hwid: String) throws -> JSON {
        try herald.ok("getTags", ["application": Self.app, "hwid": .string(hwid)])["result"] ?? .null
    }

    func listedTags() throws -> [String] {
        let listed = try herald.ok("listTags", ["auth": .string(HeraldProcesses.apiToken)])
        return listed["tags"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
    }

    @Test func anAPITokenFollowedByANULDoesNotAuthenticate() throws {
        let body = JSON.object(["request": ["tag": ["name": "Hidden", "type": 1]]]).encoded()
        let head = "POST /json/1.3/addTag HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n"
        let authorization: [UInt8] = Array("Authorization: Token \(HeraldProcesses.apiToken)".utf8) + [0] + Array("junk\r\n\r\n".utf8)
        try expectOneRefusal(exchange(Array(head.utf8) + authorization + body))
        #expect(try !listedTags().contains("Hidden"))
        // The same call without the NUL is a write: the check above would have seen it.
        let clean = try exchange(Array("\(head)Authorization: Token \(HeraldProcesses.apiToken)\r\nConnection: close\r\n\r\n".utf8) + body)
        #expect(clean.text.hasPrefix("HTTP/1.1 200 "), "\(clean.text.prefix(300))")
        #expect(try listedTags().contains("Hidden"))
    }

    @Test func aContentLengthCutAtANULLetsNoRequestThrough() throws {
        let first = registerDevice("cut-first"), second = registerDevice("cut-second")
        let smuggled = Array("POST /json/1.3/registerDevice HTTP/1.1\r\nHost: x\r\nContent-Length: \(second.count)\r\n\r\n".utf8) + second
        let request = Array("POST /json/1.3/registerDevice HTTP/1.1\r\nHost: x\r\nContent-Length: \(first.count)".utf8) + [0]
            + Array(" 0\r\n\r\n".utf8) + first + smuggled
        try expectOneRefusal(exchange(request))
        #expect(try tags("cut-first") == [:])
        #expect(try tags("cut-second") == [:])
    }

    @Test func aBodyBehindAContentLengthWithASpaceBeforeItsColonIsNeverServed() throws {
        let metrics = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
        let answer = try exchange(Array("POST /json/1.3/getTags HTTP/1.1\r\nHost: x\r\nContent-Length : \(metrics.utf8.count)\r\n\r\n\(metrics)".utf8))
        try expectOneRefusal(answer)
        #expect(!answer.text.contains("herald_"), "no metrics: \(answer.text.debugDescription)")
    }

    @Test func aWriteWithTwoHostsOrAFoldedLineOrAnUnknownTransferEncodingChangesNothing() throws {
        let heads = [
            ("two-hosts", "Host: x\r\nHost: y\r\n"),
            ("folded", "Host: x\r\nX-Note: one\r\n two\r\n"),
            ("not-a-token", "Host: x\r\nX Note: one\r\n"),
        ]
        for (hwid, fields) in heads {
            let body = registerDevice(hwid)
            try expectOneRefusal(exchange(Array("POST /json/1.3/registerDevice HTTP/1.1\r\n\(fields)Content-Length: \(body.count)\r\n\r\n".utf8) + body))
            #expect(try tags(hwid) == [:], "\(hwid)")
        }
        let chunked = registerDevice("gzip")
        let encoded = Array("\(String(chunked.count, radix: 16))\r\n".utf8) + chunked + Array("\r\n0\r\n\r\n".utf8)
        try expectOneRefusal(exchange(Array("POST /json/1.3/registerDevice HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n".utf8)
                                      + encoded))
        #expect(try tags("gzip") == [:])
        // The same request, clean, registers the device.
        let clean = try exchange(Array("POST /json/1.3/registerDevice HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".utf8)
                                 + encoded)
        #expect(clean.text.hasPrefix("HTTP/1.1 200 "), "\(clean.text.prefix(300))")
        #expect(try tags("gzip") == ["Smuggled": 1])
    }

    @Test func a405NamesTheAllowedMethods() throws {
        let client = HTTPClient(port: herald.httpPort)
        let auth = [("Authorization", "Token \(HeraldProcesses.apiToken)")]
        let cases: [(String, String, String)] = [
            ("GET", "/json/1.3/getTags", "POST"),
            ("GET", "/onesignal/adddevice", "POST"),
            ("POST", "/rich-media/\(HeraldProcesses.appCode)/page.zip", "GET, HEAD"),
            ("POST", "/api/v1/apps/\(HeraldProcesses.appCode)/rich-media", "GET, HEAD"),
            ("POST", "/api/v1/apps/\(HeraldProcesses.appCode)/in-apps/banner", "GET, HEAD, PUT, DELETE"),
        ]
        for (method, path, allowed) in cases {
            let response = try client.request(method, path, body: method == "POST" ? Array("{}".utf8) : [], headers: auth)
            #expect(response.status == 405, "\(method) \(path)")
            #expect(response.headers["allow"] == allowed, "\(method) \(path)")
        }
    }
}
