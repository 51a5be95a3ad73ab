import Testing
@testable import Core

@Suite struct PayloadBuilderWebTests {
    @Test func thePayloadHasTheWebSDKKeysAndKeepsItsHash() {
        var spec = MessageSpec(content: ["default": "Body", "fr": "Corps"])
        spec.title = ["default": "Title"]
        var web = MessageSpec.WebOptions()
        web.title = ["fr": "Titre"]
        web.duration = 0
        web.rootParams = ["p": "overridden", "campaign": "spring"]
        spec.web = web
        let inbox = PayloadBuilder.InboxLink(code: "ABCD-1", expiresAt: 1_900_000_000, image: nil)
        #expect(PayloadBuilder.web(spec, hash: "H", language: "fr", inbox: inbox) == [
            "body": "Corps", "header": "Titre", "p": "H", "duration": "0", "campaign": "spring",
            "pw_inbox": "ABCD-1", "inbox_params": .string(#"{"rt":"1900000000"}"#),
        ])
        // Without a web title the message title is used; nothing empty is sent.
        spec.web?.title = nil
        #expect(PayloadBuilder.web(spec, hash: "H", language: "fr")["header"] == "Title")
        #expect(PayloadBuilder.web(MessageSpec(content: ["default": "x"]), hash: "H", language: nil) == ["body": "x", "p": "H"])
    }

    @Test func topicsAreShortBase64URL() {
        #expect(MessageSpec.WebOptions.isValidTopic("spring-sale_2"))
        #expect(MessageSpec.WebOptions.isValidTopic(String(repeating: "a", count: 32)))
        #expect(!MessageSpec.WebOptions.isValidTopic(String(repeating: "a", count: 33)))
        #expect(!MessageSpec.WebOptions.isValidTopic("spring sale"))
        #expect(!MessageSpec.WebOptions.isValidTopic(""))
    }

    @Test func anOversizedLanguageIsNamed() {
        var spec = MessageSpec(content: ["default": "short", "de": String(repeating: "ü", count: 2_000)])
        #expect(PayloadBuilder.webSizeCheck(spec)?.hasSuffix("exceeds the limit of 3993 bytes (language \"de\")") == true)
        spec.content["de"] = String(repeating: "u", count: 3_000)
        #expect(PayloadBuilder.webSizeCheck(spec) == nil)
    }
}
