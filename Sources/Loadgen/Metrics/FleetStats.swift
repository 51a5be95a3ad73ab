/// Everything a fleet counted: per method, the events by name, the devices registered, and the
/// scheduled requests that never started. Workers keep one each; the run adds them up.
struct FleetStats: Equatable {
    var methods = [MethodStats](repeating: MethodStats(), count: FleetMethod.allCases.count)
    /// Successful postEvent calls by event name, indexed like `FleetStats.eventNames`.
    var events = [Int](repeating: 0, count: FleetStats.eventNames.count)
    /// Devices whose registration (registerDevice or adddevice) succeeded in this run.
    var registered = 0
    /// Of them, iOS SDK devices registered without notification permission (`notificationTypes` 0).
    var optedOut = 0
    /// OneSignal helper devices whose last editdevice in this run unsubscribed them.
    var unsubscribed = 0
    /// The devices a campaign that shows something (not silent, no conditions) reaches, as far as
    /// this run registered them: registered, less opted out and unsubscribed.
    var expectedAudience: Int { max(0, registered - optedOut - unsubscribed) }
    /// Open loop: requests whose scheduled start came before the end but that never started,
    /// because their connection was still waiting for earlier replies.
    var dropped = 0
    /// The first socket or TLS error text seen of each kind (`TLS: certificate rejected: …`).
    var details: [ErrorKind: String] = [:]
    /// Bytes of the requests that got a reply, and of their replies (heads included).
    var bytesSent = 0
    var bytesReceived = 0

    /// The names postEvent sends, in a fixed order.
    static let eventNames = ["PW_ScreenOpen", "PW_UserIdle", "PW_ApplicationExit", "PW_InAppPurchase"]
        + DeviceCatalog.customEvents.map(\.description)

    static func eventIndex(_ step: FleetStep) -> Int? {
        switch step {
        case .screen: return 0
        case .idle: return 1
        case .exit: return 2
        case .purchase: return 3
        case .custom(let index, _): return 4 + index
        default: return nil
        }
    }

    var ok: Int { methods.reduce(0) { $0 + $1.ok } }
    var failed: Int { methods.reduce(0) { $0 + $1.failed } }
    var requests: Int { ok + failed }

    var errors: [ErrorKind: Int] {
        methods.reduce(into: [:]) { $0.merge($1.errors, uniquingKeysWith: +) }
    }

    var latency: LatencyHistogram {
        methods.reduce(into: LatencyHistogram()) { $0.merge($1.latency) }
    }

    mutating func merge(_ other: FleetStats) {
        for index in methods.indices { methods[index].merge(other.methods[index]) }
        for index in events.indices { events[index] += other.events[index] }
        registered += other.registered
        optedOut += other.optedOut
        unsubscribed += other.unsubscribed
        dropped += other.dropped
        details.merge(other.details) { mine, _ in mine }
        bytesSent += other.bytesSent
        bytesReceived += other.bytesReceived
    }
}
