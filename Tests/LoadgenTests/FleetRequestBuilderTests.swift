import Core
import Foundation
@testable import Loadgen
import SDKClient
import Testing

/// The requests a fleet sends are what the SDKs send: valid JSON in the envelope, the right types
/// per platform, real-looking tokens, and the seven tag types.
struct FleetRequestBuilderTests {
    let builder = FleetRequestBuilder(target: try! TargetURL(parsing: "http://127.0.0.1:8080/base/json/1.3/"), app: "ABCDE-12345")
    let now: Int64 = 1_772_409_600

    /// Builds one request and splits it into its head lines and body.
    func request(_ step: FleetStep, _ device: FleetDevice, playerID: String? = nil) throws -> (head: [String], body: [UInt8]) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        let length = try #require(builder.write(step, device: device, now: now, playerID: playerID.map { Array($0.utf8) }, into: buffer))
        let bytes = Array(buffer[0..<length])
        let separator = try #require((0..<bytes.count - 3).first { bytes[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) })
        let head = String(decoding: bytes[..<separator], as: UTF8.self).components(separatedBy: "\r\n")
        let body = Array(bytes[(separator + 4)...])
        let declared = head.first { $0.hasPrefix("Content-Length: ") }.flatMap { Int($0.dropFirst(16)) }
        #expect(declared == body.count)
        return (head, body)
    }

    func device(ios: Bool, oneSignal: Bool = false) -> FleetDevice {
        (0..<1000).lazy.map { FleetDevice(seed: 3, index: $0, oneSignalFraction: oneSignal ? 1 : 0) }
            .first { $0.isIOS == ios }!
    }

    @Test func registerDeviceCarriesWhatEachSDKSends() throws {
        for ios in [true, false] {
            let device = device(ios: ios)
            let (head, body) = try request(.register, device)
            #expect(head[0] == "POST /base/json/1.3/registerDevice HTTP/1.1")
            #expect(head.contains("Host: 127.0.0.1:8080"))
            #expect(head.contains("Content-Type: application/json; charset=utf-8"))
            #expect(head.contains(ios ? "Authorization: Token (null)" : "Authorization: Token "))
            let request = try #require(try JSON.parse(body)["request"])
            #expect(request["application"] == "ABCDE-12345")
            #expect(request["device_type"] == .int(ios ? 1 : 3))
            let hwid = try #require(request["hwid"]?.stringValue)
            #expect(UUID(uuidString: hwid) != nil)
            #expect(hwid == (ios ? hwid.uppercased() : hwid.lowercased()))
            let token = try #require(request["push_token"]?.stringValue)
            if ios {
                #expect(token.count == 64 && token.allSatisfy { $0.isHexDigit && !$0.isUppercase })
                #expect(request["timezone"]?.stringValue.flatMap { Int($0) } != nil)  // iOS: a string
                #expect(request["gateway"] == "production" || request["gateway"] == "sandbox")
                #expect(request["userId"] != nil)  // iOS always names a user
            } else {
                #expect(token.count == 163 && token.contains(":APA91b"))
                if case .int = request["timezone"] {} else { Issue.record("Android sends timezone as a number") }
                #expect(request["device_name"] == "Phone" || request["device_name"] == "Tablet")
            }
            #expect(request["v"] == (ios ? "7.1.3" : "6.10.0"))
            for field in ["language", "app_version", "os_version", "device_model"] {
                #expect(request[field]?.stringValue?.isEmpty == false, "\(field)")
            }
            // Every field the shared SDK request shapes name is there too.
            let shared = SDKRequests.registerDevice(app: "ABCDE-12345", SDKDevice(hwid, platform: ios ? 1 : 3, token: token, language: "en",
                                                                                   timezone: 0, gateway: ios ? "production" : nil))
            for key in shared.objectValue!.keys { #expect(request[key] != nil, "\(key)") }
        }
    }

    @Test func theFirstSetTagsHasEveryTagType() throws {
        let (_, body) = try request(.setTags(initial: true, variant: 99), device(ios: false))
        let tags = try #require(try JSON.parse(body)["request"]?["tags"]?.objectValue)
        var types: Set<TagType> = []
        for (name, value) in tags {
            if name == "AppBuild" {
                #expect(value.stringValue?.split(separator: ".").count == 3)
                types.insert(.version)
            } else {
                types.insert(try #require(TagRules.inferType(of: value), "\(name)"))
            }
        }
        #expect(types == Set(TagType.allCases))
    }

    @Test func laterSetTagsUseTheOperations() throws {
        var seen: Set<String> = []
        for variant in UInt64(0)..<200 {
            let (_, body) = try request(.setTags(initial: false, variant: variant &* 0x9E37_79B9), device(ios: false))
            let tags = try #require(try JSON.parse(body)["request"]?["tags"]?.objectValue)
            #expect((1...3).contains(tags.count))
            for value in tags.values { if let operation = value["operation"]?.stringValue { seen.insert(operation) } }
            // Every update is one Herald accepts.
            #expect(throws: Never.self) { try TagUpdate.parse(tags) }
        }
        #expect(seen == ["increment", "append", "remove"])
    }

    @Test func eventsCarryTheSDKsAttributesAndTimestamps() throws {
        for ios in [true, false] {
            let device = device(ios: ios)
            let steps: [FleetStep] = [.screen(2), .custom(0, variant: 5), .custom(1, variant: 6), .custom(2, variant: 7), .custom(3, variant: 8),
                                      .purchase(variant: 9), .idle(screen: 1, session: 300, idle: 45), .exit(screen: 1, session: 360, exitIntent: 30)]
            for step in steps {
                let (head, body) = try request(step, device)
                #expect(head[0] == "POST /base/json/1.3/postEvent HTTP/1.1")
                let request = try #require(try JSON.parse(body)["request"])
                #expect(request["event"]?.stringValue == step.eventName)
                #expect(request["timestampUTC"] == .int(now))
                #expect(request["timestampCurrent"] == .int(now + device.timezone))
                let attributes = try #require(request["attributes"]?.objectValue)
                // iOS sends numeric attributes as strings (except purchases), Android as numbers.
                #expect(attributes["device_type"] == (ios ? "1" : 3))
                if case .idle = step {
                    #expect(attributes["idle_seconds"] == (ios ? "45" : 45))
                    #expect(attributes["screen_name"] != nil)
                }
                if case .purchase = step {
                    #expect(attributes["quantity"] == 1)
                    #expect(ios ? attributes["__amount"]?.lenientDouble != nil : attributes["amount"]?.stringValue != nil)
                }
            }
        }
    }

    @Test func oneSignalDevicesPostTheHelpersForm() throws {
        let device = device(ios: true, oneSignal: true)
        #expect(device.usesOneSignal)
        let (head, body) = try request(.register, device)
        #expect(head[0] == "POST /base/onesignal/adddevice HTTP/1.1")
        #expect(head.contains("Content-Type: application/x-www-form-urlencoded; charset=utf-8"))
        let fields = form(body)
        #expect(fields["app_id"] == "ABCDE-12345" && fields["device_type"] == "0" && fields["notification_types"] == "1")
        #expect(fields["identifier"]?.count == 64)
        #expect(fields["device_model"]?.hasPrefix("iP") == true && fields["game_version"] != nil && fields["device_os"] != nil)

        let (editHead, editBody) = try request(.editTags(initial: true, variant: 1), device, playerID: "0f8fad5b-d9cb-469f-a165-70867728950e")
        #expect(editHead[0] == "POST /base/onesignal/editdevice HTTP/1.1")
        let edit = form(editBody)
        #expect(edit["player_id"] == "0f8fad5b-d9cb-469f-a165-70867728950e")
        let tags = try JSON.parse(try #require(edit["tags"]))
        #expect(tags.objectValue?.count == 9)

        let (_, unsubscribe) = try request(.subscription(subscribed: false), device, playerID: "p")
        #expect(form(unsubscribe)["notification_types"] == "-2")
    }

    @Test func dateTagsAreFormattedInUTC() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { buffer.deallocate() }
        for (seconds, text) in [(Int64(0), "1970-01-01 00:00"), (1_772_409_600 + 3_723, "2026-03-02 01:02"),
                                (951_782_400, "2000-02-29 00:00"), (-1, "1969-12-31 23:59")] {
            var writer = ByteWriter(buffer)
            writer.tagDate(seconds)
            #expect(String(decoding: writer.written, as: UTF8.self) == text)
        }
    }

    func form(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            fields[parts[0]] = parts.count > 1 ? parts[1].removingPercentEncoding : ""
        }
        return fields
    }
}
