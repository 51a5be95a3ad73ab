@testable import HTTP2
import Testing

/// A response's header fields: looked up by name, the last of a repeated name wins (as the
/// dictionary it replaces did), and names or values of any length survive.
@Suite struct HTTP2HeadersTests {
    @Test func fieldsAreFoundByNameAndTheLastOfARepeatedNameWins() {
        var headers = HTTP2Headers()
        #expect(headers.isEmpty && headers["apns-id"] == nil)
        headers.append(name: Array("apns-id".utf8), value: Array("0a1b2c3d-0000-4000-8000-000000000001".utf8))
        headers.append(name: Array("retry-after".utf8), value: Array("30".utf8))
        headers.append(name: Array("retry-after".utf8), value: Array("120".utf8))
        headers.append(name: Array("empty".utf8), value: [UInt8]())
        #expect(headers["apns-id"] == "0a1b2c3d-0000-4000-8000-000000000001")
        #expect(headers["retry-after"] == "120")
        #expect(headers["empty"] == "")
        #expect(headers["apns"] == nil && headers["retry-afterx"] == nil && headers[""] == nil)
    }

    @Test func longValuesAndLiteralsKeepEveryByte() {
        let long = String(repeating: "v", count: 70_000)
        let headers: HTTP2Headers = ["x-long": long, "content-type": "application/json"]
        #expect(headers["x-long"] == long)
        #expect(headers["content-type"] == "application/json")
        #expect(HTTP2Headers(["a": "1", "b": "2"])["b"] == "2")
    }
}
