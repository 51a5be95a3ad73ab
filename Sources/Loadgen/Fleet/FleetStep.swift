/// One thing a device does: a Device API call (or a OneSignal helper call) with what varies in it.
enum FleetStep: Equatable {
    /// registerDevice (SDK), or the helper's adddevice.
    case register
    case applicationOpen
    case getTags
    /// setTags: every tag type at once after registering (`initial`), later a few changes.
    case setTags(initial: Bool, variant: UInt64)
    /// PW_ScreenOpen of a screen of the catalog.
    case screen(Int)
    /// One of `DeviceCatalog.customEvents`.
    case custom(Int, variant: UInt64)
    /// PW_InAppPurchase.
    case purchase(variant: UInt64)
    /// PW_UserIdle after `idle` seconds without a touch, `session` seconds into the session.
    case idle(screen: Int, session: Int, idle: Int)
    /// PW_ApplicationExit: still in the background `exitIntent` seconds after leaving.
    case exit(screen: Int, session: Int, exitIntent: Int)
    /// The helper's editdevice with tags.
    case editTags(initial: Bool, variant: UInt64)
    /// The helper's editdevice with notification_types 1 (subscribe) or -2 (unsubscribe).
    case subscription(subscribed: Bool)

    func method(oneSignal: Bool) -> FleetMethod {
        switch self {
        case .register: return oneSignal ? .oneSignalAddDevice : .registerDevice
        case .applicationOpen: return .applicationOpen
        case .getTags: return .getTags
        case .setTags: return .setTags
        case .screen, .custom, .purchase, .idle, .exit: return .postEvent
        case .editTags, .subscription: return .oneSignalEditDevice
        }
    }

    /// The postEvent name, for events.
    var eventName: String? {
        switch self {
        case .screen: return "PW_ScreenOpen"
        case .custom(let index, _): return DeviceCatalog.customEvents[index].description
        case .purchase: return "PW_InAppPurchase"
        case .idle: return "PW_UserIdle"
        case .exit: return "PW_ApplicationExit"
        default: return nil
        }
    }
}
