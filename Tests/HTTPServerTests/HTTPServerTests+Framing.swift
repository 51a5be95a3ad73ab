import Core
import Foundation
import HTTPServer
import SDKClient
import Synchronization
import Testing
import TestSupport

/// Message framing on raw loopback sockets: pipelined requests, chunked bodies, HTTP/1.0, a client
/// that half-closes, and answers that come from another thread.
extension HTTPServerTests {
    /// A server whose POSTs are offloaded and answered from another thread after `delay` seconds,
    /// and whose other requests are answered inline; every answer echoes the path and body length.
    func offloadingServer(delay: Double = 0.01, maxBodyBytes: Int = 1024,
                          counters: HTTPConnectionCounters = HTTPConnectionCounters()) throws -> HTTPServer {
        var settings = HTTPSettings()
        settings.port = 0
        settings.threads = 2
        settings.maxBodyBytes = maxBodyBytes
        let echo: @Sendable (HTTPRequest) -> HTTPResponse = { request in
            .json(["path": .string(request.path), "length": .int(Int64(request.body.count))])
        }
        let server = HTTPServer(settings: settings, classify: { $0.method == "POST" ? .offload : .inline },
                                offload: { request, respond in
                                    DispatchQueue.global().asyncAfter(deadline: .now() + delay) { respond(echo(request)) }
                                }, counters: counters, handler: echo)
        try server.start()
        return server
    }

    /// The paths the answers in `text` name, in order.
    func answeredPaths(_ text: String) -> [String] {
        text.matches(of: try! Regex(#""path":"([^"]*)""#)).map { String($0.output[1].substring ?? "") }
    }

    @Test func pipelinedRequestsAreAnsweredInOrderWhateverThreadAnswersEach() throws {
        let server = try offloadingServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        // One write: inline and offloaded requests mixed, the last one closing.
        connection.send("POST /1 HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
            + "GET /2 HTTP/1.1\r\nHost: x\r\n\r\n"
            + "POST /3 HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
            + "GET /4 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let (text, closed) = connection.readAnswer()
        #expect(answeredPaths(text) == ["/1", "/2", "/3", "/4"], "\(text.debugDescription)")
        #expect(text.contains(#""length":3"#))
        #expect(closed, "Connection: close ends the connection after the last answer")
    }

    /// An answer handed over as the work that makes it runs on the connection's I/O thread (one of
    /// the server's `http-N` threads), not on the thread that answered, and reaches the client.
    @Test func anAnswerMadeLaterIsMadeOnTheIOThread() throws {
        var settings = HTTPSettings()
        settings.port = 0
        settings.threads = 2
        let makers = Mutex<[String]>([])
        let server = HTTPServer(settings: settings, classify: { _ in .offload }, offload: { request, respond in
            Thread(named: "answering") {
                respond.making {
                    makers.withLock { $0.append(Thread.current.name ?? "") }
                    return .json(["path": .string(request.path)])
                }
            }.start()
        }, handler: { _ in .json([:]) })
        try server.start()
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        connection.send("POST /made HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
            + "POST /again HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        let (text, _) = connection.readAnswer()
        #expect(answeredPaths(text) == ["/made", "/again"], "\(text.debugDescription)")
        let names = makers.withLock { $0 }
        #expect(names.count == 2 && names.allSatisfy { $0.hasPrefix("http-") }, "\(names)")
    }

    @Test func aChunkedBodyIsReassembledAndOneOverTheLimitIsRefusedWith413() throws {
        let server = try offloadingServer(maxBodyBytes: 10)
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        connection.send("POST /chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4;name=v\r\nabcd\r\n")
        connection.send("3\r\nefg\r\n0\r\nX-Trailer: t\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let (text, _) = connection.readAnswer()
        #expect(answeredPaths(text) == ["/chunked", "/next"], "\(text.debugDescription)")
        #expect(text.contains(#""length":7"#))

        let large = try RawConnection(port: server.port)
        large.send("POST /large HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n12345678\r\n")
        let (refused, closed) = large.readAnswer()
        #expect(refused.hasPrefix("HTTP/1.1 413 "), "\(refused.debugDescription)")
        #expect(closed)

        let broken = try RawConnection(port: server.port)
        broken.send("POST /broken HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n")
        #expect(broken.readUntilClosed().hasPrefix("HTTP/1.1 400 "))
    }

    @Test func http10ConnectionsCloseUnlessTheyAskToStayAndAHalfClosedClientStillGetsItsAnswer() throws {
        let server = try offloadingServer(delay: 0.2)
        defer { server.stop() }
        let plain = try RawConnection(port: server.port)
        plain.send("GET /plain HTTP/1.0\r\n\r\n")
        let (closing, closed) = plain.readAnswer()
        #expect(closing.hasPrefix("HTTP/1.1 200 ") && closing.contains("Connection: close\r\n") && closed)

        let kept = try RawConnection(port: server.port)
        kept.send("GET /kept HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(kept.readHead().contains("Connection: keep-alive\r\n"))
        #expect(!kept.isClosedByServer)

        // The request's answer comes 0.2 s after the client has shut its sending side.
        let halfClosed = try RawConnection(port: server.port)
        halfClosed.send("POST /half HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok")
        shutdown(halfClosed.fd, Int32(SHUT_WR))
        let (answer, ended) = halfClosed.readAnswer()
        #expect(answeredPaths(answer) == ["/half"], "\(answer.debugDescription)")
        #expect(ended)
    }

    /// The status line and Content-Length carry the answer's status and body size in decimal, for
    /// every number of digits.
    @Test func theStatusLineAndContentLengthAreWrittenInDecimal() throws {
        var settings = HTTPSettings()
        settings.port = 0
        settings.threads = 1
        // GET /<status>/<length>: that status with a body of that many bytes.
        let server = HTTPServer(settings: settings, classify: { _ in .inline }, offload: { _, _ in },
                                counters: HTTPConnectionCounters(), handler: { request in
                                    let parts = request.path.split(separator: "/").compactMap { Int($0) }
                                    return HTTPResponse(status: parts[0], body: Array(repeating: UInt8(ascii: "x"), count: parts[1]))
                                })
        try server.start()
        defer { server.stop() }
        let cases = [(200, 0), (200, 1), (201, 9), (404, 10), (500, 99), (503, 100), (200, 1234), (200, 70_000)]
        for (status, length) in cases {
            let connection = try RawConnection(port: server.port)
            connection.send("GET /\(status)/\(length) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            let text = connection.readUntilClosed()
            let reason = status == 200 ? "OK" : status == 201 ? "Created" : status == 404 ? "Not Found"
                : status == 500 ? "Internal Server Error" : "Service Unavailable"
            #expect(text.hasPrefix("HTTP/1.1 \(status) \(reason)\r\n"), "\(text.prefix(80).debugDescription)")
            #expect(text.contains("\r\nContent-Length: \(length)\r\n"), "\(status) \(length)")
            #expect(text.hasSuffix("\r\n\r\n" + String(repeating: "x", count: length)), "\(status) \(length)")
        }
    }

    @Test func expectContinueIsAnsweredBeforeTheBodyAndAHeadAnswerHasNoBody() throws {
        let server = try offloadingServer()
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        connection.send("POST /upload HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n")
        #expect(connection.readHead().hasPrefix("HTTP/1.1 100 Continue\r\n"))
        connection.send("hello")
        #expect(connection.readHead().hasPrefix("HTTP/1.1 200 "))
        let head = try RawConnection(port: server.port)
        head.send("HEAD /h HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        let text = head.readUntilClosed()
        #expect(text.hasPrefix("HTTP/1.1 200 ") && text.contains("Content-Length: "))
        #expect(text.hasSuffix("\r\n\r\n"), "no body after the head: \(text.debugDescription)")
    }

    @Test func aConnectionRefusedWithMuchUnreadBehindItClosesWhenThePeerDoes() throws {
        let counters = HTTPConnectionCounters()
        let server = try offloadingServer(delay: 0.2, counters: counters)
        defer { server.stop() }
        let connection = try RawConnection(port: server.port)
        // An offloaded request, then 100 KB without a line end: read while the request waits, then
        // refused (414) once it is answered.
        connection.send("POST /first HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" + String(repeating: "X", count: 100_000))
        let (text, closed) = connection.readAnswer()
        #expect(answeredPaths(text) == ["/first"] && text.contains("HTTP/1.1 414 "), "\(text.prefix(400).debugDescription)")
        #expect(closed)
        shutdown(connection.fd, Int32(SHUT_RDWR))
        let deadline = Date().addingTimeInterval(3)
        while counters.snapshot.open > 0, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(counters.snapshot.open == 0, "the server closed its side too")
    }
}
