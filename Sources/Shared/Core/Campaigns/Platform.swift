/// The Pushwoosh `device_type` codes: which ones Herald accepts, which it delivers to, and how the
/// OneSignal helper's codes map onto them. A new platform code is added here and nowhere else.
public enum Platform {
    public static let iOS = 1
    public static let android = 3
    public static let amazon = 9

    /// Every code the SDKs and the Remote API may send (iOS, BlackBerry, Android, Windows Phone, macOS,
    /// Windows, Amazon, Safari, Chrome, Firefox, IE, email, Huawei, SMS, Edge, WhatsApp…).
    public static let known: Set<Int> = [1, 2, 3, 5, 7, 8, 9, 10, 11, 12, 13, 17, 18, 19, 21]

    /// The codes Herald delivers pushes to (APNs and FCM), in targeting order.
    public static let deliverable = [iOS, android]

    /// Whether a device of this code is delivered through APNs (else FCM).
    public static func usesAPNs(_ code: Int) -> Bool { code == iOS }

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
