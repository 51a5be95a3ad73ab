import SDKClient
import Testing

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
