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

/// The reply check: one pass over the body, valid JSON object or not, and its top-level status.
struct EnvelopeScannerTests {
    func scan(_ text: String) -> EnvelopeScanner.Envelope? {
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBytes { EnvelopeScanner.scan($0, 0..<bytes.count) }
    }

    @Test func findsTheTopLevelStatusOnly() {
        #expect(scan("{\"status_code\":200,\"status_message\":\"OK\",\"response\":null}")?.statusCode == 200)
        #expect(scan(" {\"response\":{\"status_code\":500},\"status_code\" : 210 } \n")?.statusCode == 210)
        #expect(scan("{\"response\":{\"status_code\":200}}")?.statusCode == nil)
        #expect(scan("{\"status_code\":\"200\"}")?.statusCode == nil)
        let oneSignal = scan("{\"status\":1,\"success\":true,\"player_id\":\"0f8f-ad5b\"}")
        #expect(oneSignal?.status == 1 && oneSignal?.playerID == 40..<49)
    }

    @Test func rejectsWhatIsNotOneJSONObject() {
        for text in ["ok", "", "[1]", "{\"a\":1", "{\"a\":1}}", "{\"a\":01x}", "{\"a\":tru}", "{\"a\":\"\u{1}\"}", "{'a':1}",
                     "{\"a\":[1,]}", "<html>502 Bad Gateway</html>", "{\"a\":\"\\q\"}"] {
            #expect(scan(text) == nil, "\(text.debugDescription)")
        }
        for text in ["{}", "{\"a\":[1,2.5e-3,{\"b\":[true,false,null]}],\"c\":\"\\u00e9\\n\"}", "{\"big\":123456789012345678901234}"] {
            #expect(scan(text) != nil, "\(text.debugDescription)")
        }
    }
}

/// Load targets as users write them.
struct TargetURLTests {
    @Test func parsesTheFormsUsersWrite() throws {
        #expect(try TargetURL(parsing: "http://127.0.0.1:8080") == TargetURL(isTLS: false, host: "127.0.0.1", port: 8080))
        #expect(try TargetURL(parsing: "https://push.example.com/json/1.3/") == TargetURL(isTLS: true, host: "push.example.com", port: 443))
        #expect(try TargetURL(parsing: "https://example.com:8443/herald/") ==
                TargetURL(isTLS: true, host: "example.com", port: 8443, pathPrefix: "/herald"))
        let v6 = try TargetURL(parsing: "http://[::1]:9000/json/1.3")
        #expect(v6.host == "::1" && v6.port == 9000 && v6.hostHeader == "[::1]:9000" && v6.hostIsIPLiteral)
        #expect(try TargetURL(parsing: "http://localhost").hostHeader == "localhost")
        for bad in ["127.0.0.1:8080", "ftp://x", "http://", "http://:80", "http://h:0", "http://h:99999", "http://u@h", "http://[::1"] {
            #expect(throws: TargetURL.Invalid.self, "\(bad)") { try TargetURL(parsing: bad) }
        }
    }

    @Test func resolvesNamesAndLiterals() throws {
        let addresses = try TargetURL(parsing: "http://localhost:8080").resolve()
        #expect(addresses.first?.description == "127.0.0.1:8080")
        #expect(try TargetURL(parsing: "http://[::1]:81").resolve().map(\.description) == ["[::1]:81"])
        #expect(throws: TargetURL.Invalid.self) { try TargetURL(parsing: "http://no-such-host.invalid").resolve() }
    }
}
