import Foundation
import SDKClient

/// Writes the complete HTTP request of a device's step, byte for byte as the SDK would send it:
/// `POST <prefix>/json/1.3/<method>` with the SDK's headers and `{"request": {...}}`, or the
/// OneSignal helper's form-encoded POST. No allocation per request (but a browser's registration,
/// which derives its key pair): it writes into the buffer given.
struct FleetRequestBuilder {
    let app: [UInt8]
    /// The push service browsers subscribe at (`https://host:port`, no trailing slash).
    let webPush: [UInt8]
    /// Per method: the request line and headers up to `Content-Length: `, per platform (iOS, Android).
    private let heads: [[UInt8]]
    /// Scratch for a body before its head is written, and for the helper's JSON-encoded tags.
    private let scratch: UnsafeMutableRawBufferPointer
    private let tagScratch: UnsafeMutableRawBufferPointer

    init(target: TargetURL, app: String, webPush: String = "") {
        self.app = Array(app.utf8)
        self.webPush = Array(webPush.utf8)
        var heads: [[UInt8]] = []
        for method in FleetMethod.allCases {
            for ios in [true, false] {
                var head = "POST \(target.pathPrefix)\(method.path) HTTP/1.1\r\nHost: \(target.hostHeader)\r\n"
                if method.isOneSignal {
                    head += "Content-Type: application/x-www-form-urlencoded; charset=utf-8\r\n"
                } else {
                    // The SDKs send the header even without a configured token: iOS formats nil as "(null)".
                    head += "Content-Type: application/json; charset=utf-8\r\nAuthorization: Token \(ios ? "(null)" : "")\r\n"
                }
                head += "Content-Length: "
                heads.append(Array(head.utf8))
            }
        }
        self.heads = heads
        scratch = .allocate(byteCount: 16 * 1024, alignment: 8)
        tagScratch = .allocate(byteCount: 4 * 1024, alignment: 8)
    }

    /// Frees the scratch buffers (the builder is owned by one worker for the whole run).
    func release() {
        scratch.deallocate()
        tagScratch.deallocate()
    }

    /// Writes the request into `buffer`; returns its length, or nil when it did not fit.
    /// `now` is the wall clock in unix seconds; `playerID` the helper's id for editdevice.
    func write(_ step: FleetStep, device: FleetDevice, now: Int64, playerID: [UInt8]?,
               into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        var body = ByteWriter(scratch)
        let method = step.method(oneSignal: device.usesOneSignal)
        if method.isOneSignal {
            writeForm(step, device: device, playerID: playerID ?? [], now: now, into: &body)
        } else {
            writeJSON(step, device: device, now: now, into: &body)
        }
        guard !body.overflowed else { return nil }
        var out = ByteWriter(buffer)
        out.append(heads[method.rawValue * 2 + (device.isIOS ? 0 : 1)])
        out.int(body.count)
        out.append("\r\n\r\n")
        out.append(body.written)
        return out.overflowed ? nil : out.count
    }

    // MARK: - Pushwoosh SDK

    private func writeJSON(_ step: FleetStep, device: FleetDevice, now: Int64, into out: inout ByteWriter) {
        out.append("{\"request\":{\"application\":")
        out.quoted(app)
        out.append(",\"hwid\":\"")
        device.writeHWID(&out)
        out.append("\",\"v\":")
        out.quoted(device.sdkVersion)
        out.append(",\"device_type\":")
        out.int(device.platform)
        // iOS always sends userId (the hwid until the app sets one); Android only once set.
        if device.hasUserID {
            out.append(",\"userId\":\"")
            device.writeUserID(&out)
            out.byte(UInt8(ascii: "\""))
        } else if device.isIOS {
            out.append(",\"userId\":\"")
            device.writeHWID(&out)
            out.byte(UInt8(ascii: "\""))
        }
        switch step {
        case .register where device.isWeb:
            writeSubscription(device, into: &out)
            writeAttributes(device, into: &out)
        case .register:
            out.append(",\"push_token\":\"")
            device.writeToken(&out)
            out.byte(UInt8(ascii: "\""))
            writeAttributes(device, into: &out)
            if device.isIOS {
                out.append(",\"gateway\":")
                out.quoted(device.sandbox ? "sandbox" : "production")
                out.append(",\"time_sensitive_notifications\":false,\"scheduled_summary\":false")
            }
        case .applicationOpen:
            writeAttributes(device, into: &out)
        case .getTags:
            break
        case .setTags(let initial, let variant):
            out.append(",\"tags\":")
            writeTags(device: device, initial: initial, variant: variant, now: now, into: &out)
        case .screen(let screen):
            writeEventStart("PW_ScreenOpen", device: device, into: &out)
            out.append(",\"screen_name\":")
            out.quoted(device.screens[screen])
            writeEventEnd(device: device, now: now, into: &out)
        case .custom(let index, let variant):
            writeEventStart(DeviceCatalog.customEvents[index], device: device, into: &out)
            writeCustomAttributes(index, variant: variant, device: device, into: &out)
            writeEventEnd(device: device, now: now, into: &out)
        case .purchase(let variant):
            writeEventStart("PW_InAppPurchase", device: device, into: &out)
            let product = DeviceCatalog.products[Int(variant % UInt64(DeviceCatalog.products.count))]
            let price = Int64(99 + (variant >> 8) % 20 * 100)
            let currency = DeviceCatalog.currencies[Int((variant >> 16) % UInt64(DeviceCatalog.currencies.count))]
            out.append(",\"productIdentifier\":")
            out.quoted(product)
            // Purchase attributes keep their JSON types on iOS too; Android sends the amount as text.
            out.append(",\"quantity\":1,\"status\":\"success\",\"transactionDate\":\"")
            out.tagDate(now)
            if device.isIOS {
                out.append("\",\"__amount\":")
                out.cents(price)
                out.append(",\"__currency\":")
            } else {
                out.append("\",\"amount\":\"")
                out.cents(price)
                out.append("\",\"currency\":")
            }
            out.quoted(currency)
            writeEventEnd(device: device, now: now, into: &out)
        case .idle(let screen, let session, let idle):
            writeEventStart("PW_UserIdle", device: device, into: &out)
            writeNumber("idle_seconds", Int64(idle), device: device, into: &out)
            writeNumber("session_duration", Int64(session), device: device, into: &out)
            out.append(",\"screen_name\":")
            out.quoted(device.screens[screen])
            writeEventEnd(device: device, now: now, into: &out)
        case .exit(let screen, let session, let exitIntent):
            writeEventStart("PW_ApplicationExit", device: device, into: &out)
            writeNumber("session_duration", Int64(session), device: device, into: &out)
            writeNumber("exit_intent_seconds", Int64(exitIntent), device: device, into: &out)
            out.append(",\"screen_name\":")
            out.quoted(device.screens[screen])
            writeEventEnd(device: device, now: now, into: &out)
        case .editTags, .subscription:
            break  // helper-only steps; a helper device never runs them through the SDK
        }
        out.append("}}")
    }

    /// What the Web SDK registers for a browser's `PushSubscription`: `push_token` its endpoint,
    /// `public_key` its p256dh point and `auth_token` its auth secret, both in standard base64.
    private func writeSubscription(_ device: FleetDevice, into out: inout ByteWriter) {
        out.append(",\"push_token\":\"")
        out.append(webPush)
        device.writeWebPushPath(&out)
        out.append("\",\"public_key\":")
        out.quoted(Array(Data(FleetDevice.webPushPublicKey(hash: device.hash)).base64EncodedString().utf8))
        out.append(",\"auth_token\":")
        out.quoted(Array(Data(FleetDevice.webPushAuth(hash: device.hash)).base64EncodedString().utf8))
    }

    /// The fields registerDevice and applicationOpen carry about the device.
    private func writeAttributes(_ device: FleetDevice, into out: inout ByteWriter) {
        out.append(",\"language\":")
        out.quoted(device.languageCode)
        // iOS sends the UTC offset as a string, Android as a number.
        out.append(",\"timezone\":")
        if device.isIOS { out.byte(UInt8(ascii: "\"")) }
        out.int(device.timezone)
        if device.isIOS { out.byte(UInt8(ascii: "\"")) }
        out.append(",\"app_version\":")
        out.quoted(device.appVersionName)
        out.append(",\"os_version\":")
        out.quoted(device.osVersionName)
        out.append(",\"device_model\":")
        out.quoted(device.modelName)
        if device.isWeb {
            return
        } else if device.isIOS {
            out.append(",\"package\":\"com.example.shop\",\"notificationTypes\":")
            out.int(device.notificationTypes)
        } else {
            out.append(",\"device_name\":")
            out.quoted(device.isTablet ? "Tablet" : "Phone")
            out.append(",\"android_package\":\"com.example.shop\"")
        }
    }

    private func writeEventStart(_ name: StaticString, device: FleetDevice, into out: inout ByteWriter) {
        out.append(",\"event\":")
        out.quoted(name)
        out.append(",\"attributes\":{\"device_type\":")
        writeNumberValue(Int64(device.platform), device: device, into: &out)
        out.append(",\"application_version\":")
        out.quoted(device.appVersionName)
    }

    private func writeEventEnd(device: FleetDevice, now: Int64, into out: inout ByteWriter) {
        out.append("},\"timestampUTC\":")
        out.int(now)
        out.append(",\"timestampCurrent\":")
        out.int(now + device.timezone)
    }

    /// `,"name":value`: iOS turns numeric event attributes into strings, Android keeps numbers.
    private func writeNumber(_ name: StaticString, _ value: Int64, device: FleetDevice, into out: inout ByteWriter) {
        out.append(",\"")
        out.append(name)
        out.append("\":")
        writeNumberValue(value, device: device, into: &out)
    }

    private func writeNumberValue(_ value: Int64, device: FleetDevice, into out: inout ByteWriter) {
        if device.isIOS { out.byte(UInt8(ascii: "\"")) }
        out.int(value)
        if device.isIOS { out.byte(UInt8(ascii: "\"")) }
    }

    private func writeCustomAttributes(_ index: Int, variant: UInt64, device: FleetDevice, into out: inout ByteWriter) {
        let category = DeviceCatalog.categories[Int(variant % UInt64(DeviceCatalog.categories.count))]
        let sku = Int64((variant >> 8) % 5_000)
        switch index {
        case 0:  // ProductViewed
            out.append(",\"product_id\":\"sku-")
            out.int(sku)
            out.append("\",\"category\":")
            out.quoted(category)
            out.append(",\"price\":")
            if device.isIOS { out.byte(UInt8(ascii: "\"")) }
            out.cents(Int64(199 + (variant >> 24) % 20_000))
            if device.isIOS { out.byte(UInt8(ascii: "\"")) }
        case 1:  // AddToCart
            out.append(",\"product_id\":\"sku-")
            out.int(sku)
            out.byte(UInt8(ascii: "\""))
            writeNumber("quantity", Int64(1 + (variant >> 24) % 3), device: device, into: &out)
        case 2:  // Search
            out.append(",\"query\":")
            out.quoted(DeviceCatalog.searches[Int((variant >> 24) % UInt64(DeviceCatalog.searches.count))])
        default:  // Checkout
            writeNumber("items", Int64(1 + (variant >> 24) % 5), device: device, into: &out)
            out.append(",\"total\":")
            if device.isIOS { out.byte(UInt8(ascii: "\"")) }
            out.cents(Int64(999 + (variant >> 32) % 50_000))
            if device.isIOS { out.byte(UInt8(ascii: "\"")) }
            out.append(",\"currency\":")
            out.quoted(DeviceCatalog.currencies[Int((variant >> 40) % UInt64(DeviceCatalog.currencies.count))])
        }
    }

    // MARK: - Tags

    /// Tags in a realistic mix of the seven types: integer (Level, Visits by increment), string
    /// (City, Plan), list (Interests; Android also appends and removes), date (LastPurchase),
    /// boolean (Subscribed), decimal (Balance) and version (AppBuild, a version tag when the app
    /// declares it so). After registration every tag at once; later one to three changes.
    func writeTags(device: FleetDevice, initial: Bool, variant: UInt64, now: Int64, into out: inout ByteWriter) {
        out.byte(UInt8(ascii: "{"))
        let all = 9
        var first = true
        func key(_ name: StaticString, _ out: inout ByteWriter) {
            if !first { out.byte(UInt8(ascii: ",")) }
            first = false
            out.byte(UInt8(ascii: "\""))
            out.append(name)
            out.append("\":")
        }
        // Which tags: all of them, or 1–3 consecutive ones (mod 9) from a random start.
        let start = Int(variant % UInt64(all))
        let count = initial ? all : 1 + Int((variant >> 8) % 3)
        let base = device.hash
        for offset in 0..<count {
            let tag = initial ? offset : (start + offset) % all
            let roll = Mix.hash(variant, UInt64(tag))
            switch tag {
            case 0:
                key("Level", &out)
                out.int(Int64(1 + (initial ? base % 10 : roll % 60)))
            case 1:
                key("Visits", &out)
                if initial { out.int(1) } else { out.append("{\"operation\":\"increment\",\"value\":1}") }
            case 2:
                key("City", &out)
                out.quoted(DeviceCatalog.cities[Int((initial ? base >> 8 : roll) % UInt64(DeviceCatalog.cities.count))])
            case 3:
                key("Plan", &out)
                out.quoted(DeviceCatalog.plans[Int((initial ? base >> 16 : roll) % UInt64(DeviceCatalog.plans.count))])
            case 4:
                key("Interests", &out)
                let pick = Int(roll % UInt64(DeviceCatalog.interests.count))
                if !initial && !device.isIOS {
                    out.append(roll & 0x100 == 0 ? "{\"operation\":\"append\",\"value\":[" : "{\"operation\":\"remove\",\"value\":[")
                    out.quoted(DeviceCatalog.interests[pick])
                    out.append("]}")
                } else {
                    out.byte(UInt8(ascii: "["))
                    let items = 1 + Int((roll >> 8) % 3)
                    for item in 0..<items {
                        if item > 0 { out.byte(UInt8(ascii: ",")) }
                        out.quoted(DeviceCatalog.interests[(pick + item * 3) % DeviceCatalog.interests.count])
                    }
                    out.byte(UInt8(ascii: "]"))
                }
            case 5:
                key("LastPurchase", &out)
                out.byte(UInt8(ascii: "\""))
                out.tagDate(now - Int64(roll % (90 * 86_400)))
                out.byte(UInt8(ascii: "\""))
            case 6:
                key("Subscribed", &out)
                out.append(roll % 10 < 7 ? "true" : "false")
            case 7:
                key("Balance", &out)
                out.cents(Int64(roll % 100_000))
            default:
                key("AppBuild", &out)
                out.quoted(device.appVersionName)
            }
        }
        out.byte(UInt8(ascii: "}"))
    }

    // MARK: - OneSignal helper

    private func writeForm(_ step: FleetStep, device: FleetDevice, playerID: [UInt8], now: Int64, into out: inout ByteWriter) {
        out.append("app_id=")
        percentEncode(app.withUnsafeBytes { $0 }, into: &out)
        out.append("&device_type=0&game_version=")
        percentEncode(device.appVersionName, into: &out)
        out.append("&device_model=")
        percentEncode(device.modelName, into: &out)  // "iPhone15,2": the comma goes as %2C
        out.append("&device_os=")
        percentEncode(device.osVersionName, into: &out)
        switch step {
        case .register:
            out.append("&identifier=")
            device.writeToken(&out)
            out.append("&notification_types=1")
        case .editTags(let initial, let variant):
            out.append("&player_id=")
            out.append(playerID)
            out.append("&notification_types=1&tags=")
            var tags = ByteWriter(tagScratch)
            writeTags(device: device, initial: initial, variant: variant, now: now, into: &tags)
            percentEncode(tags.written, into: &out)
        case .subscription(let subscribed):
            out.append("&player_id=")
            out.append(playerID)
            out.append(subscribed ? "&notification_types=1" : "&notification_types=-2")
        default:
            break
        }
    }

    private func percentEncode(_ text: StaticString, into out: inout ByteWriter) {
        percentEncode(UnsafeRawBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount), into: &out)
    }

    /// `application/x-www-form-urlencoded`: unreserved characters as they are, the rest `%XX`.
    private func percentEncode(_ bytes: UnsafeRawBufferPointer, into out: inout ByteWriter) {
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.byte(byte)
            default:
                out.byte(UInt8(ascii: "%"))
                out.hex(UInt64(byte), digits: 2, uppercase: true)
            }
        }
    }
}
