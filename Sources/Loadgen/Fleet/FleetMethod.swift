/// The calls a fleet makes, each counted and timed on its own.
enum FleetMethod: Int, CaseIterable, Comparable {
    case registerDevice
    case applicationOpen
    case setTags
    case getTags
    case postEvent
    case oneSignalAddDevice
    case oneSignalEditDevice

    /// The name in the JSON results and the summary: the Device API method, or the helper's route.
    var name: String {
        switch self {
        case .registerDevice: return "registerDevice"
        case .applicationOpen: return "applicationOpen"
        case .setTags: return "setTags"
        case .getTags: return "getTags"
        case .postEvent: return "postEvent"
        case .oneSignalAddDevice: return "onesignal/adddevice"
        case .oneSignalEditDevice: return "onesignal/editdevice"
        }
    }

    /// The path after the target's prefix.
    var path: String {
        switch self {
        case .oneSignalAddDevice: return "/onesignal/adddevice"
        case .oneSignalEditDevice: return "/onesignal/editdevice"
        default: return "/json/1.3/" + name
        }
    }

    /// Success is the helper's `{"status": 1}` rather than the Pushwoosh envelope's `status_code` 200.
    var isOneSignal: Bool { self == .oneSignalAddDevice || self == .oneSignalEditDevice }

    static func < (lhs: FleetMethod, rhs: FleetMethod) -> Bool { lhs.rawValue < rhs.rawValue }
}
