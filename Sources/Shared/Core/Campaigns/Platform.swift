/// The Pushwoosh `device_type` codes: which ones Herald accepts, which it delivers to, and how the
/// OneSignal helper's codes map onto them. A new platform code is added here and nowhere else.
public enum Platform {
    public static let iOS = 1
    public static let android = 3
    public static let amazon = 9
    public static let huawei = 17
    /// Browsers as the Pushwoosh Web SDK names them: Chrome (and Opera), Firefox and Edge subscribe
    /// through the Push API; Safari through Safari's own push (an APNs website push token).
    public static let safari = 10
    public static let chrome = 11
    public static let firefox = 12
    public static let edge = 15

    /// Every code the SDKs and the Remote API may send (iOS, BlackBerry, Android, Windows Phone, macOS,
    /// Windows, Amazon, Safari, Chrome, Firefox, IE, Edge, email, Huawei, SMS, WhatsApp…).
    public static let known: Set<Int> = [1, 2, 3, 5, 7, 8, 9, 10, 11, 12, 13, 15, 17, 18, 19, 21]

    /// The browsers delivered through Web Push (RFC 8030): their push token is the subscription's
    /// endpoint, and registerDevice gives their keys.
    public static let web: Set<Int> = [chrome, firefox, edge]

    /// The codes Herald delivers pushes to (APNs, FCM, Huawei Push Kit and Web Push), in targeting order.
    public static let deliverable = [iOS, android, huawei, chrome, firefox, edge]

    /// Whether a device of this code is delivered through APNs.
    public static func usesAPNs(_ code: Int) -> Bool { code == iOS }

    /// Whether a device of this code is a browser delivered through Web Push (`web`).
    public static func usesWebPush(_ code: Int) -> Bool { web.contains(code) }

    /// Whether a device of this code is delivered with the message's Android options (FCM or
    /// Huawei Push Kit).
    public static func usesAndroidOptions(_ code: Int) -> Bool { !usesAPNs(code) && !usesWebPush(code) }

    /// Platform names as `devices_filter` writes them (`A("CODE", ["iOS", "Android"])`), matched
    /// without regard to case, and their codes.
    static let byName: [(name: String, code: Int)] = [
        ("iOS", iOS), ("BlackBerry", 2), ("Android", android), ("WindowsPhone", 5), ("OsX", 7), ("Windows", 8), ("Amazon", amazon),
        ("Safari", 10), ("Chrome", 11), ("Firefox", 12), ("IE", 13), ("Edge", edge),
        ("Huawei", huawei),
    ]

    /// The names `code(named:)` knows.
    public static var names: [String] { byName.map(\.name) }

    /// The code of a platform name, in any case (`"IOS"`, `"android"`).
    public static func code(named name: String) -> Int? {
        byName.first { $0.name.lowercased() == name.lowercased() }?.code
    }

    /// The OneSignal helper's `device_type` (0 iOS, 1 Android, 2 Amazon) as a Pushwoosh code.
    public static func fromOneSignal(_ code: String) -> Int? {
        switch code {
        case "0": return iOS
        case "1": return android
        case "2": return amazon
        default: return nil
        }
    }
}
