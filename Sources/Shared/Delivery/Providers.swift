import Foundation
import Core
import HTTP2

/// Every application's delivery, built from the configuration: the file sink when `sink` is set,
/// otherwise APNs for iOS devices, FCM for Android devices, Huawei Push Kit for Huawei devices and
/// Web Push for browsers. Owns the HTTP/2 transports, which `close()` releases at shutdown.
public struct Providers: Sendable {
    /// Streams an APNs connection carries (what APNs announces once a provider token is accepted), and
    /// what an FCM or push-service connection is assumed to carry: a provider's window is its
    /// connections times this, capped by `delivery.max_in_flight`. The transport itself follows what
    /// each server announces.
    static let apnsStreamsPerConnection = 1000
    static let fcmStreamsPerConnection = 100
    /// What a Huawei Push Kit connection is assumed to carry.
    static let huaweiStreamsPerConnection = 100
    /// What a push service's connection is assumed to carry.
    static let webStreamsPerConnection = 100

    /// Application code → its provider.
    public let byApp: [String: any PushProvider]
    private let transports: [any HTTP2Transport]

    /// Fails with the application's code and the cause when a key, service account or client secret
    /// cannot be used.
    public init(apps: [AppConfiguration], delivery: DeliverySettings, clock: any Clock, logger: Logger, stats: DeliveryStats)
        throws(ProviderSetupError) {
        var byApp: [String: any PushProvider] = [:]
        var transports: [any HTTP2Transport] = []
        for app in apps {
            do {
                byApp[app.code] = try Self.make(for: app, delivery: delivery, clock: clock, logger: logger, stats: stats) {
                    transports.append($0)
                }
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

    static func make(for app: AppConfiguration, delivery: DeliverySettings, clock: any Clock, logger: Logger, stats: DeliveryStats,
                     register: (any HTTP2Transport) -> Void) throws -> any PushProvider {
        if let sink = app.sink { return try SinkProvider(path: sink) }
        /// A registered transport for `channel` and the window it allows.
        func transport(_ channel: OutgoingPush.Channel, connections: Int, streams: Int, caFile: String?,
                       refusesPrivateAddresses: Bool = false, offersHTTP1: Bool = false) throws -> (client: NGHTTP2Transport, window: Int) {
            let provider = channel.rawValue
            let window = min(delivery.maxInFlight, connections * streams)
            var settings = HTTP2ClientSettings(connections: connections, maxInFlight: window, caFile: caFile)
            settings.refusesPrivateAddresses = refusesPrivateAddresses
            settings.offersHTTP1 = offersHTTP1
            let client = try NGHTTP2Transport(
                name: provider, settings: settings,
                events: HTTP2Events(requestFinished: { stats.observe(provider: provider, seconds: $0) },
                                    connectionOpened: { stats.connectionOpened(provider: provider) }))
            register(client)
            return (client, window)
        }
        var apns: (any PushProvider)?
        if let settings = app.apns {
            let (client, window) = try transport(.apns, connections: settings.connections, streams: apnsStreamsPerConnection, caFile: settings.caFile)
            let tokens = APNsTokenCache(teamID: settings.teamID, keyID: settings.keyID, key: try SigningKey(path: settings.keyPath), clock: clock)
            _ = try tokens.token()
            apns = APNsProvider(app: app.code, settings: settings, client: client, tokens: tokens, clock: clock, logger: logger, window: window)
        }
        var fcm: (any PushProvider)?
        if let settings = app.fcm {
            let (client, window) = try transport(.fcm, connections: settings.connections, streams: fcmStreamsPerConnection, caFile: settings.caFile)
            let tokens = try FCMAccessTokens(account: try ServiceAccount(path: settings.serviceAccountPath), client: client, clock: clock)
            fcm = FCMProvider(app: app.code, settings: settings, client: client, tokens: tokens, logger: logger, window: window)
        }
        var huawei: (any PushProvider)?
        if let settings = app.huawei {
            let (client, window) = try transport(.huawei, connections: settings.connections, streams: huaweiStreamsPerConnection,
                                                 caFile: settings.caFile)
            let tokens = try HuaweiAccessTokens(settings: settings, client: client, clock: clock)
            huawei = HuaweiProvider(app: app.code, client: client, tokens: tokens, logger: logger, window: window)
        }
        var web: (any PushProvider)?
        if let settings = app.web {
            guard let pem = try? String(contentsOfFile: settings.vapidPrivateKeyFile, encoding: .utf8) else {
                throw DeliveryError(message: "cannot read web.vapid_private_key_file \(settings.vapidPrivateKeyFile)", errno: Glibc.errno)
            }
            let vapid = try VAPIDTokens(pem: pem, subject: settings.subject, clock: clock)
            // Endpoints come from browsers: the transport never connects inside the network unless allowed.
            // Push services speak HTTP/2 or HTTP/1.1 (RFC 8030): the transport speaks what each selects.
            let (client, window) = try transport(.web, connections: settings.connections, streams: webStreamsPerConnection, caFile: settings.caFile,
                                                 refusesPrivateAddresses: !settings.allowsPrivateEndpoints, offersHTTP1: true)
            web = WebPushProvider(app: app.code, client: client, vapid: vapid, defaultTTL: delivery.defaultTTLSeconds, logger: logger,
                                  window: window)
        }
        let configured: [OutgoingPush.Channel: (any PushProvider)?] = [.apns: apns, .fcm: fcm, .huawei: huawei, .web: web]
        let router = ChannelRouter(app: app.code, providers: configured.compactMapValues { $0 })
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
