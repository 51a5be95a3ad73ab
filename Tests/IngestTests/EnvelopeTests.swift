import Testing
import Core
@testable import Ingest

@Suite struct EnvelopeTests {
    @Test func successCarriesStatusCode200AndTheResponse() throws {
        let response = Envelope.ok(["result": [:]])
        #expect(response.status == 200)
        let body = try JSON.parse(response.body)
        #expect(body["status_code"] == .int(200))
        #expect(body["status_message"] == .string("OK"))
        #expect(body["response"] == ["result": [:]])
        #expect(response.headers.contains { $0.0 == "Content-Type" && $0.1.hasPrefix("application/json") })
        // Byte for byte what encoding the whole envelope gives (members sorted).
        let tags: JSON = ["result": ["b": "x\u{1}\"", "a": [1, 2.5, nil, true]]]
        #expect(Envelope.ok(tags).body == JSON.object(["status_code": 200, "status_message": "OK", "response": tags]).encoded())
    }

    @Test func argumentErrorsAreHTTP200WithCode210() throws {
        let response = Envelope.argumentError("hwid is required")
        #expect(response.status == 200)
        let body = try JSON.parse(response.body)
        #expect(body["status_code"] == .int(210))
        #expect(body["status_message"] == .string("hwid is required"))
        #expect(body["response"] == .null)
    }

    @Test func failuresUseTheSameCodeTwice() throws {
        let response = Envelope.failure(404, "unknown method x")
        #expect(response.status == 404)
        #expect(try JSON.parse(response.body)["status_code"] == .int(404))
    }
}
