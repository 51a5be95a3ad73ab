import SDKClient
import Testing

/// The zero-copy response parser of the load client.
struct HTTPResponseParserTests {
    /// Feeds `text` in pieces of `step` bytes; returns the outcome once complete or malformed.
    func parse(_ text: String, step: Int = 1, atEOF: Bool = false) -> (HTTPResponseParser.Outcome, String) {
        let bytes = Array(text.utf8)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 8)
        defer { buffer.deallocate() }
        buffer.copyBytes(from: bytes)
        var parser = HTTPResponseParser()
        var count = 0
        while true {
            count = min(bytes.count, count + step)
            let outcome = parser.parse(buffer, count: count, atEOF: atEOF && count == bytes.count)
            switch outcome {
            case .needMore:
                if count == bytes.count { return (outcome, "") }
            case .complete(_, let body, _, _):
                return (outcome, String(decoding: buffer[body], as: UTF8.self))
            case .malformed:
                return (outcome, "")
            }
        }
    }

    @Test func contentLengthBodiesArriveInAnyPieces() {
        let response = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length: 13\r\n\r\n{\"a\": [1, 2]}EXTRA"
        for step in [1, 3, 7, 200] {
            let (outcome, body) = parse(response, step: step)
            guard case .complete(let status, _, let consumed, let keepAlive) = outcome else {
                Issue.record("step \(step): \(outcome)")
                continue
            }
            #expect(status == 200 && body == "{\"a\": [1, 2]}" && keepAlive)
            #expect(consumed == response.utf8.count - 5)
        }
    }

    @Test func chunkedBodiesAreJoinedInPlace() {
        let response = "HTTP/1.1 503 Busy\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4\r\n{\"st\r\nf;ext=1\r\natus_code\":500}\r\n0\r\nX-Trailer: 1\r\n\r\n"
        for step in [1, 5, 500] {
            let (outcome, body) = parse(response, step: step)
            guard case .complete(let status, _, let consumed, let keepAlive) = outcome else {
                Issue.record("step \(step): \(outcome)")
                continue
            }
            #expect(status == 503 && body == "{\"status_code\":500}" && !keepAlive && consumed == response.utf8.count)
        }
    }

    /// The head's fields stay readable after a chunked body was joined over it.
    @Test func headerFieldsAreLowerCasedAndTrimmedAfterAChunkedBody() {
        let bytes = Array("HTTP/1.1 429 Too Many\r\nRetry-After:  2 \r\nTransfer-Encoding: chunked\r\nLocation:/m/1\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n".utf8)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 8)
        defer { buffer.deallocate() }
        buffer.copyBytes(from: bytes)
        var parser = HTTPResponseParser()
        #expect(parser.headers(in: buffer).isEmpty)
        guard case .complete(429, let body, _, _) = parser.parse(buffer, count: bytes.count) else {
            Issue.record("not a complete 429")
            return
        }
        #expect(String(decoding: buffer[body], as: UTF8.self) == "abcde")
        #expect(parser.headers(in: buffer) == ["retry-after": "2", "transfer-encoding": "chunked", "location": "/m/1"])
    }

    @Test func aBodyWithoutLengthEndsWithTheConnection() {
        let (open, _) = parse("HTTP/1.0 200 OK\r\n\r\nhello", step: 100)
        #expect(open == .needMore)
        let (closed, body) = parse("HTTP/1.0 200 OK\r\n\r\nhello", step: 100, atEOF: true)
        #expect(body == "hello")
        if case .complete(_, _, _, let keepAlive) = closed { #expect(!keepAlive) } else { Issue.record("\(closed)") }
    }

    @Test func brokenResponsesAreMalformed() {
        for (text, eof) in [("SSH-2.0-OpenSSH\r\n\r\n", false), ("HTTP/1.1 2x0 OK\r\n\r\n", false),
                            ("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true),
                            ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false), ("HTTP/1.1 200", true)] {
            let (outcome, _) = parse(text, step: 1000, atEOF: eof)
            if case .malformed = outcome {} else { Issue.record("\(text.debugDescription): \(outcome)") }
        }
    }
}
