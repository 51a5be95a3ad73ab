import Core
import Foundation
import HTTPServer
import SDKClient
import Synchronization
import TestSupport
import Testing

/// How many requests a test server's handler saw.
final class HandledCount: Sendable {
    private let count = Atomic<Int>(0)
    func add() { count.add(1, ordering: .sequentiallyConsistent) }
    var value: Int { count.load(ordering: .sequentiallyConsistent) }
}

/// RFC 9112 heads on raw loopback sockets: every malformed one is refused with one answer, the
/// connection is closed, and no handler runs, whatever was pipelined behind it.
extension HTTPServerTests {
    /// A server that answers 200 and counts the requests its handler saw.
    func countingServer(_ handled: HandledCount) throws -> HTTPServer {
        var settings = HTTPSettings()
        settings.port = 0
        settings.threads = 1
        let server = HTTPServer(settings: settings) { [handled] request in
            handled.add()
            return .json(["path": .string(request.path)])
        }
        try server.start()
        return server
    }

    /// Sends `raw` (then `smuggled`, pipelined behind it) and expects exactly one answer with
    /// `status`, the connection closed by the server, and no request handled.
    func expectRefused(_ raw: [UInt8], status: Int, _ comment: String, port: UInt16, handled: HandledCount,
                       sourceLocation: SourceLocation = #_sourceLocation) throws {
        let smuggled = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
        let handledBefore = handled.value
        let connection = try RawConnection(port: port)
        connection.send(raw + Array(smuggled.utf8))
        let (answer, closed) = connection.readAnswer()
        #expect(answer.hasPrefix("HTTP/1.1 \(status) "), "\(comment): \(answer.prefix(300).debugDescription)", sourceLocation: sourceLocation)
        #expect(answer.matches(of: try Regex("HTTP/1\\.[01] [0-9]{3} ")).count == 1, "\(comment): one answer", sourceLocation: sourceLocation)
        #expect(!answer.contains("smuggled"), "\(comment): nothing behind it is read", sourceLocation: sourceLocation)
        #expect(closed, "\(comment): the server closes the connection", sourceLocation: sourceLocation)
        #expect(handled.value == handledBefore, "\(comment): no handler ran", sourceLocation: sourceLocation)
    }

    func head(_ lines: String...) -> [UInt8] { Array(lines.joined().utf8) }

    @Test func aNULHiddenInAHeaderValueIsRefused() throws {
        let handled = HandledCount()
        let server = try countingServer(handled)
        defer { server.stop() }
        try expectRefused(Array("GET /a HTTP/1.1\r\nHost: x\r\nAuthorization: Token secret".utf8) + [0] + Array("junk\r\n\r\n".utf8),
                          status: 400, "NUL inside Authorization", port: server.port, handled: handled)
        try expectRefused(Array("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5".utf8) + [0] + Array(" 0\r\n\r\nhello".utf8),
                          status: 400, "NUL inside Content-Length", port: server.port, handled: handled)
        try expectRefused(Array("GET /a HTTP/1.1\r\nHost: x\r\nX-Last: v".utf8) + [0, 0] + Array("junk\r\n\r\n".utf8),
                          status: 400, "two NULs inside the last value", port: server.port, handled: handled)
        try expectRefused(Array("GET /a HTTP/1.1\r\nHost: x\r\nX-A: v".utf8) + [0] + Array("\r\n\r\n".utf8),
                          status: 400, "NUL at the end of a value", port: server.port, handled: handled)
    }

    @Test func aCROrLFInAHeaderValueIsRefused() throws {
        let handled = HandledCount()
        let server = try countingServer(handled)
        defer { server.stop() }
        try expectRefused(head("GET /a HTTP/1.1\r\nHost: x\r\nX-A: one\rX-B: two\r\n\r\n"), status: 400, "bare CR", port: server.port, handled: handled)
        try expectRefused(head("GET /a HTTP/1.1\r\nHost: x\r\nX-A: one\nContent-Length: 0\r\n\r\n"), status: 400, "bare LF",
                          port: server.port, handled: handled)
        try expectRefused(head("GET /a HTTP/1.1\nHost: x\n\n"), status: 400, "bare LF line ends", port: server.port, handled: handled)
    }

    @Test func whitespaceBeforeAColonIsRefusedSoABodyIsNeverReadAsARequest() throws {
        let handled = HandledCount()
        let server = try countingServer(handled)
        defer { server.stop() }
        let metrics = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
        try expectRefused(head("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length : \(metrics.utf8.count)\r\n\r\n", metrics),
                          status: 400, "space before the colon", port: server.port, handled: handled)
        try expectRefused(head("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length\t: \(metrics.utf8.count)\r\n\r\n", metrics),
                          status: 400, "tab before the colon", port: server.port, handled: handled)
    }

    @Test func aHeaderNameThatIsNotATokenOrALineWithoutAColonIsRefused() throws {
        let handled = HandledCount()
        let server = try countingServer(handled)
        defer { server.stop() }
        try expectRefused(Array("GET /a HTTP/1.1\r\nHost: x\r\nX".utf8) + [0xC3, 0xA9] + Array(": 1\r\n\r\n".utf8),
                          status: 400, "non-ASCII name", port: server.port, handled: handled)
        try expectRefused(head("GET /a HTTP/1.1\r\nHost: x\r\nX(A): 1\r\n\r\n"), status: 400, "separator in a name", port: server.port, handled: handled)
        try expectRefused(head("GET /a HTTP/1.1\r\n Host: x\r\n\r\n"), status: 400, "whitespace before the first name",
                          port: server.port, handled: handled)
        try expectRefused(head("GET /a HTTP/1.1\r\nHost: x\r\n: empty\r\n\r\n"), status: 400, "empty name", port: server.port, handled: handled)
        try expectRefused(head("GET /a HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n"), status: 400, "no colon", port: server.port, handled: handled)
    }

    @Test func aFoldedHeaderLineIsRefused() throws {
        let handled = HandledCount()
        let server = try countingServer(handled)
        defer { server.stop() }
        try expectRefused(head("GET /a HTTP/1.1\r\nHost: x\r\nX-A: one\r\n two\r\nX-B: 1\r\n\r\n"), status: 400, "obs-fold (SP)",
                          port: server.port, handled: handled)
        try expectRefused(head("GET /a HTTP/1.1\r\nHost: x\r\nX-A: one\r\n\ttwo\r\n\r\n"), status: 400, "obs-fold (HTAB), last line",
                          port: server.port, handled: handled)
    }

    @Test func moreThanOneHostOrContentLengthOrAnotherTransferEncodingIsRefused() throws {
        let handled = HandledCount()
        let server = try countingServer(handled)
        defer { server.stop() }
        try expectRefused(head("GET /a HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n"), status: 400, "two Host", port: server.port, handled: handled)
        try expectRefused(head("GET /a HTTP/1.0\r\nHost: x\r\nhost: y\r\n\r\n"), status: 400, "two Host, HTTP/1.0", port: server.port, handled: handled)
        try expectRefused(head("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nbody"), status: 400,
                          "two equal Content-Length", port: server.port, handled: handled)
        try expectRefused(head("POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n"), status: 400, "gzip",
                          port: server.port, handled: handled)
        try expectRefused(head("POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
                          status: 400, "two Transfer-Encoding", port: server.port, handled: handled)
    }

    @Test func aMethodThatIsNotATokenOrATargetWithAControlCharacterIsRefused() throws {
        let handled = HandledCount()
        let server = try countingServer(handled)
        defer { server.stop() }
        try expectRefused(head("G\u{1}T /a HTTP/1.1\r\nHost: x\r\n\r\n"), status: 400, "control character in the method",
                          port: server.port, handled: handled)
        try expectRefused(Array("GE".utf8) + [0] + Array("T /a HTTP/1.1\r\nHost: x\r\n\r\n".utf8), status: 400, "NUL in the method",
                          port: server.port, handled: handled)
        try expectRefused(head("G(T /a HTTP/1.1\r\nHost: x\r\n\r\n"), status: 400, "separator in the method", port: server.port, handled: handled)
        try expectRefused(Array("GET /a".utf8) + [0] + Array("b HTTP/1.1\r\nHost: x\r\n\r\n".utf8), status: 400, "NUL in the target",
                          port: server.port, handled: handled)
        try expectRefused(head("GET /a\u{1}b HTTP/1.1\r\nHost: x\r\n\r\n"), status: 400, "control character in the target",
                          port: server.port, handled: handled)
        try expectRefused(head("GET /a%00b HTTP/1.1\r\nHost: x\r\n\r\n"), status: 400, "an encoded NUL in the path",
                          port: server.port, handled: handled)
        try expectRefused(head("GET /a?x=1%00b HTTP/1.1\r\nHost: x\r\n\r\n"), status: 400, "an encoded NUL in a query value",
                          port: server.port, handled: handled)
        try expectRefused(head("GET /a  HTTP/1.1\r\nHost: x\r\n\r\n"), status: 400, "two spaces before the version",
                          port: server.port, handled: handled)
    }

    @Test func anOverLongRequestLineIs414AndAnOverLongHeadIs431() throws {
        let handled = HandledCount()
        let server = try countingServer(handled)
        defer { server.stop() }
        try expectRefused(head("GET /\(String(repeating: "a", count: 9_000)) HTTP/1.1\r\nHost: x\r\n\r\n"), status: 414,
                          "a 9 KB request line", port: server.port, handled: handled)
        try expectRefused(head("GET /a HTTP/1.1\r\nHost: x\r\n", String(repeating: "X-Padding: \(String(repeating: "v", count: 1_000))\r\n", count: 20), "\r\n"),
                          status: 431, "a 20 KB head", port: server.port, handled: handled)
        try expectRefused(head("GET /\(String(repeating: "a", count: 70_000)) HTTP/1.1\r\nHost: x\r\n\r\n"), status: 414,
                          "a 70 KB request line", port: server.port, handled: handled)
    }

    @Test func cleanHeadsAtTheEdgesOfTheRulesAreServed() throws {
        let handled = HandledCount()
        let server = try countingServer(handled)
        defer { server.stop() }
        let heads = [
            "GET /a?x=%41&y=1 HTTP/1.1\r\nHost: x\r\nX-Empty:\r\nX-Spaces: \t v \t\r\nCookie: a=1; b=2\r\nConnection: close\r\n\r\n",
            "\r\nGET /a HTTP/1.1\r\nhost: x\r\nConnection: close\r\n\r\n",
            "GET /a HTTP/1.0\r\n\r\n",
            "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n4\r\nbody\r\n0\r\n\r\n",
            "GET /\(String(repeating: "a", count: 8_000)) HTTP/1.1\r\nHost: x\r\nX-Obs-Text: caf\u{E9}\r\nConnection: close\r\n\r\n",
        ]
        for (index, raw) in heads.enumerated() {
            let connection = try RawConnection(port: server.port)
            connection.send(raw)
            let answer = connection.readUntilClosed()
            #expect(answer.hasPrefix("HTTP/1.1 200 ") || answer.hasPrefix("HTTP/1.0 200 "), "\(raw.prefix(80).debugDescription) → \(answer.prefix(200))")
            #expect(handled.value == index + 1)
        }
    }
}
