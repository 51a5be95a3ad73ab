import Core
import SDKClient
import Testing

/// The request objects carry the fields, and the JSON types, the Pushwoosh SDKs send.
@Suite struct SDKRequestsTests {
    @Test func registerDeviceCarriesTheDeviceAndItsTags() {
        let device = SDKDevice("hw-1", platform: Platform.iOS, token: "ab12", language: "en", timezone: 3600, userID: "u-1",
                               gateway: "sandbox", tags: ["Level": 3])
        #expect(SDKRequests.registerDevice(app: "APP-1", device) == [
            "application": "APP-1", "hwid": "hw-1", "device_type": 1, "push_token": "ab12", "language": "en", "timezone": 3600,
            "userId": "u-1", "gateway": "sandbox", "tags": ["Level": 3],
        ])
        #expect(SDKRequests.registerDevice(app: "APP-1", SDKDevice("hw-2", platform: Platform.android)) == [
            "application": "APP-1", "hwid": "hw-2", "device_type": 3, "push_token": "token-hw-2",
        ])
    }

    @Test func postEventHasAttributesAndBothTimestamps() {
        let request = SDKRequests.postEvent(app: "APP-1", hwid: "hw-1", event: "PW_ScreenOpen", attributes: ["screen_name": "Home"],
                                            now: 1_700_000_000, timezone: -3600)
        #expect(request["event"] == "PW_ScreenOpen")
        #expect(request["attributes"] == ["screen_name": "Home"])
        #expect(request["timestampUTC"] == 1_700_000_000 && request["timestampCurrent"] == 1_699_996_400)
        #expect(SDKRequests.postEvent(app: "A", hwid: "h", event: "e", now: 0)["attributes"] == [:])
    }

    @Test func formEncodingEscapesEverythingButUnreservedCharacters() {
        #expect(DeviceAPIClient.formEncoded([("app_id", "A-1"), ("tags", #"{"a":"b c"}"#)]) == "app_id=A-1&tags=%7B%22a%22%3A%22b%20c%22%7D")
    }

    @Test func splitMix64IsReproducibleFromItsSeed() {
        var first = SplitMix64(seed: 42), second = SplitMix64(seed: 42)
        #expect((0..<4).map { _ in first.next() } == (0..<4).map { _ in second.next() })
    }
}
