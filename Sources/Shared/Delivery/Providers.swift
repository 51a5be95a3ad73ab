import Core
import HTTP2

/// Every application's delivery, built from the configuration: the file sink when `sink` is set,
/// otherwise APNs for iOS devices and FCM for Android devices. Owns the HTTP/2 transports, which
/// `close()` releases at shutdown.
public struct Providers: Sendable {
    /// Connections and streams per provider: a few long-lived connections, hundreds of streams.
    /// APNs pushes get two libcurl threads (one connection each), so that a worker can spend both
    /// cores of the machine on libcurl's per-push work.
    static let apnsThreads = 2
    static let apnsConnections = 2
    static let apnsInFlight = 500
    static let fcmConnections = 4
    static let fcmInFlight = 400

    /// Application code → its provider.
    public let byApp: [String: any PushProvider]
    private let transports: [any HTTP2Transport]

    /// Fails with the application's code and the cause when a key or service account cannot be used.
    public init(apps: [AppConfiguration], clock: any Clock, logger: Logger, stats: DeliveryStats) throws(ProviderSetupError) {
        var byApp: [String: any PushProvider] = [:]
        var transports: [any HTTP2Transport] = []
        for app in apps {
            do {
                byApp[app.code] = try Self.make(for: app, clock: clock, logger: logger, stats: stats) { transports.append($0) }
            } catch {
                for transport in transports { transport.close() }
                throw ProviderSetupError(app: app.code, cause: "\(error)")
            }
        }
        self.byApp = byApp
        self.transports = transports
    }

    /// Ends the transports' threads and frees their connections.
    public func close() {
        for transport in transports { transport.close() }
    }

    static func make(for app: AppConfiguration, clock: any Clock, logger: Logger, stats: DeliveryStats,
                     register: (any HTTP2Transport) -> Void) throws -> any PushProvider {
        if let sink = app.sink { return try SinkProvider(path: sink) }
        func events(_ provider: String) -> HTTP2Events {
            HTTP2Events(requestFinished: { stats.observe(provider: provider, seconds: $0) },
                        connectionOpened: { stats.connectionOpened(provider: provider) })
        }
        var apns: (any PushProvider)?
        if let settings = app.apns {
            let client = CurlHTTP2Transport(name: "herald-apns", threads: apnsThreads, maxConnections: apnsConnections,
                                            maxInFlight: apnsInFlight, caFile: settings.caFile, events: events("apns"))
            register(client)
            let tokens = APNsTokenCache(teamID: settings.teamID, keyID: settings.keyID, key: try SigningKey(path: settings.keyPath), clock: clock)
            _ = try tokens.token()
            apns = APNsProvider(app: app.code, settings: settings, client: client, tokens: tokens, clock: clock, logger: logger)
        }
        var fcm: (any PushProvider)?
        if let settings = app.fcm {
            let client = CurlHTTP2Transport(name: "herald-fcm", maxConnections: fcmConnections, maxInFlight: fcmInFlight,
                                            caFile: settings.caFile, events: events("fcm"))
            register(client)
            let tokens = try FCMAccessTokens(account: try ServiceAccount(path: settings.serviceAccountPath), client: client, clock: clock)
            fcm = FCMProvider(app: app.code, settings: settings, client: client, tokens: tokens, logger: logger)
        }
        let router = ChannelRouter(app: app.code, apns: apns, fcm: fcm)
        for breaker in router.breakers.values { stats.watch(breaker) }
        return router
    }
}

/// An application whose delivery could not be set up, and why.
public struct ProviderSetupError: Error, Sendable, CustomStringConvertible {
    public let app: String
    public let cause: String
    public var description: String { "application \(app): \(cause)" }
}
