@testable import HTTPServer
import Testing

/// `RequestHead` on heads laid out as libmicrohttpd leaves them: every consumed separator is NUL.
@Suite struct RequestHeadTests {
    /// The refusal of `parsed` (a head with `\0` for every byte the parser consumed), whose fields
    /// are given as (name, value) pairs in order; the target starts after the method's NUL and runs
    /// to the next NUL unless `targetLength` says otherwise.
    func refusal(_ parsed: [UInt8], fields: [(String, String)], targetLength: Int? = nil, targetIsClean: Bool = true) -> RequestHead.Refusal? {
        let methodLength = parsed.firstIndex(of: 0)!
        let targetStart = methodLength + 1
        let targetEnd = parsed[targetStart...].firstIndex(of: 0)!
        let versionStart = search(Array("HTTP/".utf8), in: parsed, from: targetStart)
        let versionEnd = parsed[versionStart...].firstIndex(of: 0)!
        var position = versionEnd
        var placed: [RequestHead.Field] = []
        for (name, value) in fields {
            let nameStart = search(Array(name.utf8), in: parsed, from: position)
            let valueStart = search(Array(value.utf8), in: parsed, from: nameStart + name.utf8.count + 1)
            placed.append(RequestHead.Field(name: nameStart..<nameStart + name.utf8.count, value: valueStart..<valueStart + value.utf8.count))
            position = valueStart + value.utf8.count
        }
        return parsed.withUnsafeBytes { bytes in
            RequestHead(bytes: bytes, methodLength: methodLength, targetStart: targetStart, targetLength: targetLength ?? targetEnd - targetStart,
                        targetIsClean: targetIsClean, version: versionStart..<versionEnd, fields: placed).refusal()
        }
    }

    func search(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int {
        (start...(haystack.count - needle.count)).first { Array(haystack[$0..<$0 + needle.count]) == needle }!
    }

    func parsed(_ text: String) -> [UInt8] { text.utf8.map { $0 == UInt8(ascii: "~") ? 0 : $0 } }

    @Test func aCleanHeadPasses() {
        #expect(refusal(parsed("GET~/a~HTTP/1.1~~Host~ x~~X-Empty~~~X-Ows~ \t v~~~~"), fields: [("Host", "x"), ("X-Empty", ""), ("X-Ows", "v")]) == nil)
        #expect(refusal(parsed("GET~/a~HTTP/1.0~~~~"), fields: []) == nil)
    }

    @Test func bytesBetweenThePiecesAreBytesTheParserHid() {
        // What followed a NUL in a value, a NUL before CRLF, a folded line, a bare LF line end.
        #expect(refusal(parsed("GET~/a~HTTP/1.1~~Host~ x~junk~~~~"), fields: [("Host", "x")])?.status == 400)
        #expect(refusal(parsed("GET~/a~HTTP/1.1~~Host~ x~~~~~"), fields: [("Host", "x")])?.status == 400)
        #expect(refusal(parsed("GET~/a~HTTP/1.1~~Host~ x~~ more~~~~"), fields: [("Host", "x")])?.message == "a header line is folded (obs-fold)")
        #expect(refusal(parsed("GET~/a~HTTP/1.1~Host~ x~~"), fields: [("Host", "x")])?.status == 400)
        // A NUL in the method or the target leaves a gap the request line cannot have.
        #expect(refusal(parsed("GET~/a~b~HTTP/1.1~~Host~ x~~~~"), fields: [("Host", "x")], targetLength: 2)?.status == 400)
    }

    @Test func namesMethodsAndFramingFollowTheRules() {
        #expect(refusal(parsed("GET~/a~HTTP/1.1~~Host ~ x~~~~"), fields: [("Host ", "x")])?.message
                == "whitespace between a header name and its colon")
        #expect(refusal(parsed("G(T~/a~HTTP/1.1~~Host~ x~~~~"), fields: [("Host", "x")])?.message == "the method is not a token")
        #expect(refusal(parsed("GET~/a~HTTP/1.1~~Host~ x~~host~ y~~~~"), fields: [("Host", "x"), ("host", "y")])?.message == "more than one Host")
        #expect(refusal(parsed("GET~/a~HTTP/1.1~~X~ x~~~~"), fields: [("X", "x")])?.message == "HTTP/1.1 without Host")
        #expect(refusal(parsed("GET~/a~HTTP/1.1~~Host~ x~~Transfer-Encoding~ gzip~~~~"), fields: [("Host", "x"), ("Transfer-Encoding", "gzip")])?
            .message == "a Transfer-Encoding other than chunked")
        #expect(refusal(parsed("GET~/a~HTTP/1.1~~Host~ x~~~~"), fields: [("Host", "x")], targetIsClean: false)?.status == 400)
    }

    @Test func aLongRequestLineIs414AndALongHeadIs431() {
        let target = "/" + String(repeating: "a", count: RequestHead.requestLineLimit)
        #expect(refusal(parsed("GET~\(target)~HTTP/1.1~~Host~ x~~~~"), fields: [("Host", "x")])?.status == 414)
        let padding = String(repeating: "v", count: RequestHead.headLimit)
        #expect(refusal(parsed("GET~/a~HTTP/1.1~~Host~ x~~X~ \(padding)~~~~"), fields: [("Host", "x"), ("X", padding)])?.status == 431)
    }
}
