@testable import HTTPServer
import Testing

/// `RequestHead.parse` on raw bytes as a client sends them.
@Suite struct RequestHeadTests {
    func parse(_ bytes: [UInt8]) -> RequestHead.Parse { bytes.withUnsafeBytes { RequestHead.parse($0) } }
    func parse(_ text: String) -> RequestHead.Parse { parse(Array(text.utf8)) }

    /// The head and its length when `bytes` start with a clean one, else nil.
    func head(_ bytes: [UInt8]) -> (head: RequestHead, length: Int)? {
        if case .complete(let head, let length) = parse(bytes) { return (head, length) }
        return nil
    }

    func head(_ text: String) -> (head: RequestHead, length: Int)? { head(Array(text.utf8)) }

    func refusal(_ bytes: [UInt8]) -> RequestHead.Refusal? {
        if case .refused(let refusal) = parse(bytes) { return refusal }
        return nil
    }

    func refusal(_ text: String) -> RequestHead.Refusal? { refusal(Array(text.utf8)) }

    func isIncomplete(_ bytes: [UInt8]) -> Bool {
        if case .incomplete = parse(bytes) { return true }
        return false
    }

    func isIncomplete(_ text: String) -> Bool { isIncomplete(Array(text.utf8)) }

    func malformed(_ message: String) -> RequestHead.Refusal { .malformed(message) }

    @Test func aCleanHeadIsParsedIntoItsFields() throws {
        let raw = "POST /a%20b/c%2Fd%zz+e%4?x=%41&y=1+2%2B&flag&&x=later&%6B=%E2%82%AC HTTP/1.1\r\n"
            + "Host: example.com\r\nContent-Type:  application/json \t\r\nX-Other: ignored\r\ncontent-type: second\r\n"
            + "AUTHORIZATION:Token t\r\nCookie: a=1; b=2\r\nX-Forwarded-For: 10.0.0.1\r\nContent-Length: 4\r\nConnection: keep-alive\r\n\r\nbody"
        let (head, length) = try #require(self.head(raw))
        #expect(head.method == "POST")
        #expect(head.path == "/a b/c/d%zz+e%4")
        #expect(head.query == ["x": "later", "y": "1 2+", "flag": "", "k": "€"])
        #expect(head.minorVersion == 1)
        #expect(head.headers == [
            "host": "example.com", "content-type": "application/json", "authorization": "Token t", "cookie": "a=1; b=2",
            "x-forwarded-for": "10.0.0.1",
        ])
        #expect(head.contentLength == 4)
        #expect(!head.chunked)
        #expect(head.keepAlive)
        #expect(!head.expectsContinue)
        #expect(length == raw.utf8.count - 4)
    }

    @Test func aHeadWithoutQueryOrFramingHasEmptyDefaults() throws {
        let (head, length) = try #require(self.head("GET / HTTP/1.0\r\n\r\n"))
        #expect(head.method == "GET")
        #expect(head.path == "/")
        #expect(head.query.isEmpty)
        #expect(head.minorVersion == 0)
        #expect(head.headers.isEmpty)
        #expect(head.contentLength == nil)
        #expect(!head.chunked)
        #expect(length == 18)
        #expect(try #require(self.head("GET /a? HTTP/1.1\r\nHost: x\r\n\r\n")).head.query.isEmpty)
    }

    @Test func invalidUTF8DecodesWithReplacementCharactersAndObsTextIsKept() throws {
        let raw = Array("GET /a%FFb?k=%C3 HTTP/1.1\r\nHost: caf".utf8) + [0xE9] + Array("\r\n\r\n".utf8)
        let head = try #require(self.head(raw)).head
        #expect(head.path == "/a\u{FFFD}b")
        #expect(head.query == ["k": "\u{FFFD}"])
        #expect(head.headers["host"] == "caf\u{FFFD}")
    }

    @Test func aChunkedHeadEndsBeforeItsFirstChunk() throws {
        let raw = "POST /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:  Chunked \r\n\r\n4\r\nbody\r\n0\r\n\r\n"
        let (head, length) = try #require(self.head(raw))
        #expect(head.chunked)
        #expect(head.contentLength == nil)
        #expect(length == raw.utf8.count - "4\r\nbody\r\n0\r\n\r\n".utf8.count)
    }

    @Test func theLengthMarksWhereAPipelinedRequestStarts() throws {
        let first = "GET /first HTTP/1.1\r\nHost: x\r\n\r\n"
        let raw = Array((first + "GET /second HTTP/1.1\r\nHost: y\r\n\r\n").utf8)
        let (head, length) = try #require(self.head(raw))
        #expect(head.path == "/first")
        #expect(length == first.utf8.count)
        let next = try #require(self.head(Array(raw[length...])))
        #expect(next.head.path == "/second")
        #expect(next.head.headers["host"] == "y")
    }

    @Test func emptyLinesBeforeTheRequestLineAreSkippedAndCounted() throws {
        let raw = "\r\n\r\nGET /a HTTP/1.1\r\nhost: x\r\n\r\n"
        let (head, length) = try #require(self.head(raw))
        #expect(head.path == "/a")
        #expect(length == raw.utf8.count)
    }

    @Test func theFirstOfARepeatedInterestingHeaderIsKept() throws {
        let head = try #require(self.head("GET /a HTTP/1.1\r\nHost: x\r\nAccept: one\r\nACCEPT: two\r\nRange: bytes=0-1\r\nrange: x\r\n\r\n")).head
        #expect(head.headers == ["host": "x", "accept": "one", "range": "bytes=0-1"])
    }

    @Test func keepAliveFollowsTheVersionAndTheConnectionTokens() throws {
        let cases: [(version: String, connection: String?, keepAlive: Bool)] = [
            ("HTTP/1.1", nil, true),
            ("HTTP/1.1", "close", false),
            ("HTTP/1.1", "Keep-Alive , \tCLOSE ", false),
            ("HTTP/1.1", "closed, x-close", true),
            ("HTTP/1.2", nil, true),
            ("HTTP/1.0", nil, false),
            ("HTTP/1.0", "keep-alive", true),
            ("HTTP/1.0", "upgrade,\tKeep-Alive", true),
            ("HTTP/1.0", "keep-alive, close", false),
        ]
        for (version, connection, keepAlive) in cases {
            let raw = "GET /a \(version)\r\nHost: x\r\n" + (connection.map { "Connection: \($0)\r\n" } ?? "") + "\r\n"
            #expect(try #require(head(raw)).head.keepAlive == keepAlive, "\(raw.debugDescription)")
        }
        #expect(try #require(head("GET /a HTTP/1.2\r\nHost: x\r\n\r\n")).head.minorVersion == 1)
    }

    @Test func expectsContinueIs100ContinueOnHTTP11() throws {
        #expect(try #require(head("POST /a HTTP/1.1\r\nHost: x\r\nExpect:  100-Continue \r\nContent-Length: 1\r\n\r\n")).head.expectsContinue)
        #expect(try #require(head("POST /a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue-x\r\n\r\n")).head.expectsContinue == false)
        #expect(try #require(head("POST /a HTTP/1.0\r\nExpect: 100-continue\r\n\r\n")).head.expectsContinue == false)
    }

    @Test func anEighteenDigitContentLengthIsANumber() throws {
        #expect(try #require(head("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999999999\r\n\r\n")).head.contentLength
                == 999_999_999_999_999_999)
        #expect(try #require(head("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 007\r\n\r\n")).head.contentLength == 7)
    }

    @Test func cleanHeadsAtTheEdgesOfTheRulesAreServed() {
        let heads = [
            "GET /a?x=%41&y=1 HTTP/1.1\r\nHost: x\r\nX-Empty:\r\nX-Spaces: \t v \t\r\nCookie: a=1; b=2\r\nConnection: close\r\n\r\n",
            "GET /a HTTP/1.0\r\n\r\n",
            "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
            "M-S!#$%&'*+.^_`|~1 /caf\u{E9}?%=%25 HTTP/1.9\r\nHost: x\r\nX-!#$%&'*+.^_`|~: v\r\n\r\n",
            "GET /\(String(repeating: "a", count: 8_000)) HTTP/1.1\r\nHost: x\r\nX-Obs-Text: caf\u{E9}\r\nConnection: close\r\n\r\n",
        ]
        for raw in heads { #expect(head(raw) != nil, "\(raw.prefix(80).debugDescription)") }
    }

    @Test func aHeadCutAnywhereBeforeItsBlankLineIsIncomplete() {
        for raw in [
            "POST /a?b=c HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nX-Empty:\r\nX-A: 1 \r\n\r\n",
            "\r\n\r\nGET /a HTTP/1.0\r\n\r\n",
        ] {
            let bytes = Array(raw.utf8)
            for cut in 0..<bytes.count {
                #expect(isIncomplete(Array(bytes[..<cut])), "\(String(decoding: bytes[..<cut], as: UTF8.self).debugDescription)")
            }
            #expect(head(bytes)?.length == bytes.count)
        }
    }

    @Test func aRuleBrokenBeforeTheHeadEndsIsRefusedWithoutWaitingForIt() {
        #expect(refusal("G(T /a") == malformed("the method is not a token"))
        #expect(refusal("GET /a\u{1}") == malformed("the request target contains a space, a control character or %00"))
        #expect(refusal("GET /a HTTP/2") == malformed("the protocol version is not HTTP/1.x"))
        #expect(refusal("GET /a HTTP/1.1 ") == malformed("the request line is not method SP target SP version, or holds a NUL"))
        #expect(refusal("GET /a HTTP/1.1\n") == malformed("a line does not end with CRLF"))
        #expect(refusal(Array("GET /a HTTP/1.1\r\nHost: x\r\nX-A: v".utf8) + [0])
                == malformed("a header value contains NUL, CR, LF or another control character"))
        #expect(refusal("GET /a HTTP/1.1\r\nHost: x\r\nHost: y\r\n") == malformed("more than one Host"))
        #expect(refusal("GET /a HTTP/1.1\r\nHost: x\r\nContent-Length :") == malformed("whitespace between a header name and its colon"))
    }

    @Test func aRequestLineThatIsNotMethodSPTargetSPVersionIsRefused() {
        let shape = malformed("the request line is not method SP target SP version, or holds a NUL")
        for line in ["GET /a  HTTP/1.1", "GET  /a HTTP/1.1", " GET /a HTTP/1.1", "GET /a", "GET", "GET /a HTTP/1.1 x", "GET /a b HTTP/1.1"] {
            #expect(refusal("\(line)\r\nHost: x\r\n\r\n") == shape, "\(line.debugDescription)")
        }
        #expect(refusal(Array("GE".utf8) + [0] + Array("T /a HTTP/1.1\r\nHost: x\r\n\r\n".utf8)) == shape)
        #expect(refusal(Array("GET /a".utf8) + [0] + Array("b HTTP/1.1\r\nHost: x\r\n\r\n".utf8)) == shape)
    }

    @Test func aMethodThatIsNotATokenIsRefused() {
        for method in ["G(T", "G\u{1}T", "G\tT", "GÉT", "G:T"] {
            #expect(refusal("\(method) /a HTTP/1.1\r\nHost: x\r\n\r\n") == malformed("the method is not a token"), "\(method.debugDescription)")
        }
    }

    @Test func aTargetWithAControlCharacterOrAnEncodedNULIsRefused() {
        for target in ["/a\u{1}b", "/a\tb", "/a\u{7F}", "/a%00b", "/a?x=1%00", "/a?%00=1"] {
            #expect(refusal("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
                    == malformed("the request target contains a space, a control character or %00"), "\(target.debugDescription)")
        }
    }

    @Test func aVersionOtherThanHTTP1xIsRefused() {
        for version in ["HTTP/2.0", "HTTP/1.10", "HTTP/1.x", "http/1.1", "HTTP/1.", "HTTP/1", "HTTP/1.1\t"] {
            #expect(refusal("GET /a \(version)\r\nHost: x\r\n\r\n") == malformed("the protocol version is not HTTP/1.x"), "\(version.debugDescription)")
        }
    }

    @Test func aLineThatDoesNotEndWithCRLFIsRefused() {
        let lineEnd = malformed("a line does not end with CRLF")
        #expect(refusal("GET /a HTTP/1.1\nHost: x\n\n") == lineEnd)
        #expect(refusal("GET /a HTTP/1.1\rHost: x\r\n\r\n") == lineEnd)
        #expect(refusal("GET /a HTTP/1.1\r\nHost: x\r\n\n") == lineEnd)
        #expect(refusal("GET /a HTTP/1.1\r\nHost: x\r\n\rX") == lineEnd)
        #expect(refusal("\nGET /a HTTP/1.1\r\nHost: x\r\n\r\n") == lineEnd)
    }

    @Test func aHeaderValueWithNULCRLFOrAnotherControlCharacterIsRefused() {
        let control = malformed("a header value contains NUL, CR, LF or another control character")
        let start = Array("GET /a HTTP/1.1\r\nHost: x\r\n".utf8)
        let heads: [[UInt8]] = [
            start + Array("Authorization: Token secret".utf8) + [0] + Array("junk\r\n\r\n".utf8),
            start + Array("Content-Length: 5".utf8) + [0] + Array(" 0\r\n\r\nhello".utf8),
            start + Array("X-Last: v".utf8) + [0, 0] + Array("junk\r\n\r\n".utf8),
            start + Array("X-A: v".utf8) + [0] + Array("\r\n\r\n".utf8),
            start + Array("X-A: one\rX-B: two\r\n\r\n".utf8),
            start + Array("X-A: one\nContent-Length: 0\r\n\r\n".utf8),
            start + Array("X-A: a\u{1}b\r\n\r\n".utf8),
            start + Array("X-A: a\u{7F}\r\n\r\n".utf8),
        ]
        for raw in heads { #expect(refusal(raw) == control, "\(String(decoding: raw, as: UTF8.self).debugDescription)") }
    }

    @Test func aHeaderNameThatIsNotATokenOrALineWithoutAColonIsRefused() {
        let start = "GET /a HTTP/1.1\r\nHost: x\r\n"
        let notAToken = malformed("a header name is not a token")
        #expect(refusal(Array((start + "X").utf8) + [0xC3, 0xA9] + Array(": 1\r\n\r\n".utf8)) == notAToken)
        #expect(refusal(start + "X(A): 1\r\n\r\n") == notAToken)
        #expect(refusal(start + "X A: 1\r\n\r\n") == notAToken)
        #expect(refusal(start + ": empty\r\n\r\n") == malformed("a header line is malformed"))
        #expect(refusal(start + "NoColonHere\r\n\r\n") == malformed("a header line is malformed"))
        #expect(refusal(start + "No Colon Here\r\n\r\n") == malformed("a header line is malformed"))
    }

    @Test func whitespaceBeforeAColonIsRefused() {
        for separator in [" :", "\t:", " \t :"] {
            #expect(refusal("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length\(separator) 4\r\n\r\nbody")
                    == malformed("whitespace between a header name and its colon"), "\(separator.debugDescription)")
        }
    }

    @Test func aFoldedHeaderLineIsRefused() {
        let folded = malformed("a header line is folded (obs-fold)")
        #expect(refusal("GET /a HTTP/1.1\r\nHost: x\r\nX-A: one\r\n two\r\nX-B: 1\r\n\r\n") == folded)
        #expect(refusal("GET /a HTTP/1.1\r\nHost: x\r\nX-A: one\r\n\ttwo\r\n\r\n") == folded)
        #expect(refusal("GET /a HTTP/1.1\r\n Host: x\r\n\r\n") == folded)
    }

    @Test func moreThanOneHostOrAnHTTP11HeadWithoutHostIsRefused() {
        #expect(refusal("GET /a HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n") == malformed("more than one Host"))
        #expect(refusal("GET /a HTTP/1.0\r\nHost: x\r\nhost: y\r\n\r\n") == malformed("more than one Host"))
        #expect(refusal("GET /a HTTP/1.1\r\nX-Host: x\r\n\r\n") == malformed("HTTP/1.1 without Host"))
        #expect(refusal("GET /a HTTP/1.2\r\n\r\n") == malformed("HTTP/1.1 without Host"))
    }

    @Test func aContentLengthThatIsNotOneNumberIsRefused() {
        let start = "POST /a HTTP/1.1\r\nHost: x\r\n"
        #expect(refusal(start + "Content-Length: 4\r\nContent-Length: 4\r\n\r\nbody") == malformed("more than one Content-Length"))
        for value in ["", "abc", "-1", "+5", "5 0", "0x10", "4,4", "1234567890123456789", "99999999999999999999999"] {
            #expect(refusal(start + "Content-Length: \(value)\r\n\r\n") == malformed("a Content-Length that is not a number"),
                    "\(value.debugDescription)")
        }
    }

    @Test func aTransferEncodingOtherThanOneChunkedOrOneWithAContentLengthIsRefused() {
        let start = "POST /a HTTP/1.1\r\nHost: x\r\n"
        let other = malformed("a Transfer-Encoding other than chunked")
        for value in ["gzip", "chunked, identity", "gzip, chunked", "xchunked", ""] {
            #expect(refusal(start + "Transfer-Encoding: \(value)\r\n\r\n") == other, "\(value.debugDescription)")
        }
        #expect(refusal(start + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") == other)
        let both = malformed("both Content-Length and Transfer-Encoding")
        #expect(refusal(start + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n") == both)
        #expect(refusal(start + "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n") == both)
    }

    @Test func aRequestLineOver8192BytesIs414WhetherOrNotItHasEnded() {
        let tooLong = RequestHead.Refusal(status: 414, message: "the request line is longer than 8192 bytes")
        // "GET /" and " HTTP/1.1" around the path's letters.
        let longest = "GET /" + String(repeating: "a", count: RequestHead.requestLineLimit - 14) + " HTTP/1.1"
        #expect(head(longest + "\r\nHost: x\r\n\r\n") != nil)
        #expect(refusal(longest + "a\r\nHost: x\r\n\r\n") == tooLong)
        #expect(refusal("GET /\(String(repeating: "a", count: 70_000)) HTTP/1.1\r\nHost: x\r\n\r\n") == tooLong)
        #expect(refusal("GET /\(String(repeating: "\u{1}", count: 9_000)) HTTP/1.1\r\nHost: x\r\n\r\n") == tooLong)
        #expect(isIncomplete(Array(longest.utf8.prefix(RequestHead.requestLineLimit))))
        #expect(refusal(longest + "a") == tooLong)
        #expect(refusal("GET /\(String(repeating: "a", count: 70_000))") == tooLong)
    }

    @Test func aHeadOver16384BytesIs431WhetherOrNotItHasEnded() {
        let tooLong = RequestHead.Refusal(status: 431, message: "the request head is longer than 16384 bytes")
        let start = "GET /a HTTP/1.1\r\nHost: x\r\nX-Padding: "
        let longest = start + String(repeating: "v", count: RequestHead.headLimit - start.utf8.count - 4) + "\r\n\r\n"
        #expect(head(longest)?.length == RequestHead.headLimit)
        #expect(refusal("X" + longest) == tooLong)
        #expect(refusal(start + String(repeating: "v", count: RequestHead.headLimit - start.utf8.count - 3) + "\r\n\r\n") == tooLong)
        let padding = String(repeating: "X-Padding: \(String(repeating: "v", count: 1_000))\r\n", count: 20)
        #expect(refusal("GET /a HTTP/1.1\r\nHost: x\r\n" + padding + "\r\n") == tooLong)
        #expect(isIncomplete(Array(longest.utf8.prefix(RequestHead.headLimit - 1))))
        #expect(refusal("GET /a HTTP/1.1\r\nHost: x\r\n" + padding) == tooLong)
        #expect(refusal(String(repeating: "\r\n", count: RequestHead.headLimit)) == tooLong)
        #expect(refusal(String(repeating: "\r\n", count: 6_000) + "GET /\(String(repeating: "a", count: 6_000))") == tooLong)
    }
}
