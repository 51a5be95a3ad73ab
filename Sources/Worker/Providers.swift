import Shared

/// Builds an application's delivery from its configuration: the file sink when `sink` is set,
/// otherwise APNs for iOS devices and FCM for Android devices.
enum Providers {
    /// Connections and streams per provider: a few long-lived connections, hundreds of streams.
    /// APNs pushes get two libcurl threads (one connection each), so that a worker can spend both
    /// cores of the machine on libcurl's per-push work.
    static let apnsThreads = 2
    static let apnsConnections = 2
    static let apnsInFlight = 500
    static let fcmConnections = 4
    static let fcmInFlight = 400

    static func make(for app: AppConfiguration, clock: any Clock, logger: Logger, stats: DeliveryStats,
                     register: (HTTP2Client) -> Void) throws -> any PushProvider {
        if let sink = app.sink { return try SinkProvider(path: sink) }
        var apns: (any PushProvider)?
        if let settings = app.apns {
            let client = HTTP2Client(name: "herald-apns", threads: apnsThreads, maxConnections: apnsConnections, maxInFlight: apnsInFlight,
                                     caFile: settings.caFile, observe: { stats.observe(provider: "apns", seconds: $0) })
            register(client)
            let tokens = APNsTokenCache(teamID: settings.teamID, keyID: settings.keyID, key: try SigningKey(path: settings.keyPath), clock: clock)
            _ = try tokens.token()
            apns = APNsProvider(app: app.code, settings: settings, client: client, tokens: tokens, clock: clock, logger: logger)
        }
        var fcm: (any PushProvider)?
        if let settings = app.fcm {
            let client = HTTP2Client(name: "herald-fcm", maxConnections: fcmConnections, maxInFlight: fcmInFlight, caFile: settings.caFile,
                                     observe: { stats.observe(provider: "fcm", seconds: $0) })
            register(client)
            let tokens = try FCMAccessTokens(account: try ServiceAccount(path: settings.serviceAccountPath), client: client, clock: clock)
            fcm = FCMProvider(app: app.code, settings: settings, client: client, tokens: tokens, logger: logger)
        }
        return ChannelRouter(apns: apns, fcm: fcm)
    }
}
