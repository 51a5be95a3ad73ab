import Core
import SDKClient
import TestSupport
import Testing

/// Server-side tags (setTags and getTags by `userId`, with the application's token) and the tag
/// registry (listTags, addTag, deleteTag) against the real `herald-ingest`, in the request shapes of
/// `pushwoosh-remote-api.md`, with the refusals of malformed input and foreign tokens.
@Suite(.serialized) struct RemoteAPITagsTests {
    static let app = JSON.string(HeraldProcesses.appCode)
    static let auth = JSON.string(HeraldProcesses.apiToken)

    func envelope(_ herald: HeraldProcesses, _ method: String, _ request: JSON) throws -> JSON {
        let (status, body) = try herald.call(method, request)
        guard status == 200, body["status_code"] == 200 else {
            throw HTTPClient.Failure(description: "\(method): HTTP \(status) \(body.text)")
        }
        return body["response"] ?? .null
    }

    func tags(_ herald: HeraldProcesses, hwid: String) throws -> JSON {
        try envelope(herald, "getTags", ["application": Self.app, "hwid": .string(hwid)])["result"] ?? .null
    }

    @Test func tagsByUserAndTheRegistryInTheReferenceShapes() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        try herald.register(SDKDevice("u-1", platform: 1, userID: "carol", tags: ["City": "Paris"]))
        try herald.register(SDKDevice("u-2", platform: 3, userID: "carol"))
        try herald.register(SDKDevice("u-3", platform: 1, tags: ["City": "Lyon"]))

        // setTags with userId: every device of the user; getTags with userId: the user's tags.
        #expect(try envelope(herald, "setTags", ["application": Self.app, "auth": Self.auth, "userId": "carol", "tags": ["Level": 7, "City": "Nice"]]) == .null)
        #expect(try tags(herald, hwid: "u-1") == ["City": "Nice", "Level": 7])
        #expect(try tags(herald, hwid: "u-2") == ["City": "Nice", "Level": 7])
        #expect(try tags(herald, hwid: "u-3") == ["City": "Lyon"])
        #expect(try envelope(herald, "getTags", ["application": Self.app, "auth": Self.auth, "userId": "carol"]) == ["result": ["City": "Nice", "Level": 7]])

        // addTag, listTags, deleteTag: auth and tag only.
        let tier: JSON = ["name": "Tier", "type": 1, "application_specific": true, "user_specific": false]
        #expect(try envelope(herald, "addTag", ["auth": Self.auth, "tag": tier]) == ["result": true])
        #expect(try envelope(herald, "addTag", ["auth": Self.auth, "tag": tier]) == ["result": true])
        let listed = try envelope(herald, "listTags", ["auth": Self.auth])
        #expect(listed == ["tags": [
            ["name": "City", "type": 2, "isApplicationSpecific": true],
            ["name": "Level", "type": 1, "isApplicationSpecific": true],
            ["name": "Tier", "type": 1, "isApplicationSpecific": true],
        ]], "\(listed.text)")
        // The added type decides: a string is refused, a number taken.
        let refused = try herald.call("setTags", ["application": Self.app, "hwid": "u-3", "tags": ["Tier": "gold"]])
        #expect(refused.body["status_code"] == 210, "\(refused.body.text)")
        #expect(try envelope(herald, "setTags", ["application": Self.app, "auth": Self.auth, "userId": "carol", "tags": ["Tier": 3]]) == .null)
        #expect(try envelope(herald, "deleteTag", ["auth": Self.auth, "tag": ["name": "City"]]) == ["result": true])
        #expect(try tags(herald, hwid: "u-1") == ["Level": 7, "Tier": 3])
        #expect(try tags(herald, hwid: "u-3") == [:])
        let names = try envelope(herald, "listTags", ["auth": Self.auth])["tags"]?.arrayValue?.compactMap { $0["name"]?.stringValue }
        #expect(names == ["Level", "Tier"])
        // Authorization: Token works as well as auth.
        let viaHeader = try herald.client.request("POST", "/json/1.3/listTags", body: JSON.object(["request": [:]]).encoded(),
                                                  headers: [("Content-Type", "application/json"), ("Authorization", "Token shop-secret")])
        #expect(try viaHeader.status == 200 && JSON.parse(viaHeader.body)["response"]?["tags"]?.arrayValue?.count == 2)
    }

    /// Naming a user and no device reads or changes every device of that user: without the
    /// application's api_token (none, a wrong one, another application's) it is HTTP 403 and
    /// nothing is read or changed. The SDKs' form, with the device's hwid, needs no token.
    @Test func aUsersTagsNeedTheApplicationsToken() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        try herald.register(SDKDevice("u-1", platform: 1, userID: "carol", tags: ["Secret": "s3cr3t"]))
        let news = JSON.string("news-secret")
        let tagsBefore = try envelope(herald, "listTags", ["auth": Self.auth])
        for credentials in [[:], ["auth": "wrong"], ["auth": news]] as [[String: JSON]] {
            func request(_ fields: [String: JSON]) -> JSON { .object(fields.merging(credentials) { first, _ in first }) }
            let calls: [(String, JSON)] = [
                ("getTags", request(["application": Self.app, "userId": "carol"])),
                ("getTags", request(["application": Self.app, "userId": "carol", "hwid": ""])),
                ("setTags", request(["application": Self.app, "userId": "carol", "tags": ["Planted": "yes", "Secret": "gone"]])),
                ("setTags", request(["application": Self.app, "userId": "carol", "hwid": .null, "tags": ["Planted": "yes"]])),
                ("mergeUser", request(["application": Self.app, "oldUserId": "carol", "newUserId": "mallory"])),
                // Refused before the fields are looked at: no hint that the tags are missing.
                ("setTags", request(["application": Self.app, "userId": "carol"])),
            ]
            for (method, body) in calls {
                let (status, reply) = try herald.call(method, body)
                #expect(status == 403 && reply["status_code"] == 403 && reply["response"] == .null, "\(method) \(body.text): \(reply.text)")
            }
        }
        // Nothing was read or changed: the tag, the user and the application's tags are as they were.
        #expect(try tags(herald, hwid: "u-1") == ["Secret": "s3cr3t"])
        #expect(try envelope(herald, "listTags", ["auth": Self.auth]) == tagsBefore)
        #expect(try envelope(herald, "getTags", ["application": Self.app, "auth": Self.auth, "userId": "carol"]) == ["result": ["Secret": "s3cr3t"]])
        #expect(try envelope(herald, "getTags", ["application": Self.app, "auth": Self.auth, "userId": "mallory"]) == ["result": [:]])
        // The token as a header works as well as auth; another application's token names its own users only.
        let viaHeader = try herald.client.request("POST", "/json/1.3/getTags",
                                                  body: JSON.object(["request": ["application": Self.app, "userId": "carol"]]).encoded(),
                                                  headers: [("Content-Type", "application/json"), ("Authorization", "Token \(HeraldProcesses.apiToken)")])
        #expect(try viaHeader.status == 200 && JSON.parse(viaHeader.body)["response"] == ["result": ["Secret": "s3cr3t"]])
        #expect(try envelope(herald, "getTags", ["application": .string(HeraldProcesses.otherAppCode), "auth": news, "userId": "carol"])
            == ["result": [:]])
        // The SDKs' form names the device and sends no token, as before.
        #expect(try envelope(herald, "setTags", ["application": Self.app, "hwid": "u-1", "userId": "carol", "tags": ["Level": 3]]) == .null)
        #expect(try envelope(herald, "getTags", ["application": Self.app, "hwid": "u-1", "userId": "carol"]) == ["result": ["Level": 3, "Secret": "s3cr3t"]])
        #expect(try envelope(herald, "mergeUser", ["application": Self.app, "hwid": "u-1", "oldUserId": "carol", "newUserId": "carol-2"]) == .null)
        #expect(try envelope(herald, "mergeUser", ["application": Self.app, "auth": Self.auth, "oldUserId": "carol-2", "newUserId": "carol"]) == .null)
        #expect(try envelope(herald, "getTags", ["application": Self.app, "auth": Self.auth, "userId": "carol"]) == ["result": ["Level": 3, "Secret": "s3cr3t"]])
    }

    @Test func malformedInputIsA210NamingTheFieldAForeignTokenA403AndNothingChanges() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        try herald.register(SDKDevice("u-1", platform: 1, userID: "carol", tags: ["City": "Paris", "Level": 2]))
        let news = JSON.string("news-secret")
        let cases: [(String, JSON, Int64, String)] = [
            ("setTags", ["application": Self.app, "auth": Self.auth, "userId": "carol"], 210, "tags is required"),
            ("setTags", ["application": Self.app, "tags": ["City": "x"]], 210, "hwid is required"),
            ("setTags", ["application": Self.app, "auth": Self.auth, "userId": "nobody", "tags": ["City": "x"]], 210, "userId nobody has no device"),
            ("setTags", ["application": Self.app, "auth": Self.auth, "userId": "carol", "tags": ["Level": "high"]], 210, "Level"),
            ("setTags", ["application": Self.app, "auth": Self.auth, "userId": ["carol"], "tags": ["City": "x"]], 210, "userId must be a string"),
            // Without the application's token the fields are not even looked at.
            ("setTags", ["application": Self.app, "userId": "carol"], 403, "access denied"),
            ("setTags", ["application": Self.app, "auth": news, "userId": ["carol"], "tags": ["City": "x"]], 403, "access denied"),
            ("getTags", ["application": Self.app], 210, "hwid or userId is required"),
            ("addTag", ["auth": Self.auth], 210, "tag is required"),
            ("addTag", ["auth": Self.auth, "tag": "Tier"], 210, "tag must be an object"),
            ("addTag", ["auth": Self.auth, "tag": ["type": 1]], 210, "tag.name is required"),
            ("addTag", ["auth": Self.auth, "tag": ["name": "Tier"]], 210, "tag.type is required"),
            ("addTag", ["auth": Self.auth, "tag": ["name": "Tier", "type": 9]], 210, "tag.type must be 1 (integer)"),
            ("addTag", ["auth": Self.auth, "tag": ["name": "Tier", "type": 1, "user_specific": "maybe"]], 210,
             "tag.user_specific must be a boolean"),
            ("addTag", ["auth": Self.auth, "tag": ["name": "City", "type": 1]], 210, "tag City already exists as a string tag"),
            ("addTag", ["auth": "wrong", "tag": ["name": "Tier", "type": 1]], 403, "access denied"),
            ("addTag", ["auth": news, "application": Self.app, "tag": ["name": "Tier", "type": 1]], 403, "access denied"),
            ("deleteTag", ["auth": Self.auth, "tag": [:]], 210, "tag.name is required"),
            ("deleteTag", ["auth": Self.auth, "tag": ["name": "Nope"]], 210, "tag Nope not found"),
            ("deleteTag", ["auth": news, "tag": ["name": "City"]], 210, "tag City not found"),
            ("deleteTag", ["auth": "wrong", "tag": ["name": "City"]], 403, "access denied"),
            ("listTags", ["auth": "wrong"], 403, "access denied"),
            ("listTags", [:], 403, "access denied"),
        ]
        let before = try envelope(herald, "listTags", ["auth": Self.auth])
        for (method, request, expected, text) in cases {
            let (status, body) = try herald.call(method, request)
            #expect(status == (expected == 403 ? 403 : 200) && body["status_code"] == .int(expected), "\(method) \(request.text): \(body.text)")
            let message = body["status_message"]?.stringValue ?? ""
            #expect(message.contains(text), "\(method) \(request.text): \(message)")
        }
        #expect(try envelope(herald, "listTags", ["auth": Self.auth]) == before)
        #expect(try tags(herald, hwid: "u-1") == ["City": "Paris", "Level": 2])
    }
}
