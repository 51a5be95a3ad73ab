import Core
import Foundation
import HTTP2Server
import HTTPServer
import SDKClient

/// `herald-load edge …`: makes or reads the credentials, starts the APNs, FCM (also playing Huawei
/// Push Kit) and Web Push servers and the admin API, writes `edge.json`, prints READY, and serves until
/// SIGINT or SIGTERM.
enum EdgeCommand {
    /// Runs the command; returns the exit status (0 stopped by a signal, 1 cannot start, 2 bad flags).
    static func main(_ arguments: [String]) -> Int32 {
        let options: EdgeOptions
        var deadTokens: Set<String> = []
        var directory = DeviceDirectory()
        var tls: TLSClientContext?
        do throws(FleetOptions.Problem) {
            guard let parsed = try EdgeOptions.parse(arguments, cores: ProcessInfo.processInfo.activeProcessorCount) else {
                print(EdgeOptions.usage)
                return 0
            }
            options = parsed
            if let path = options.deadTokensPath { deadTokens = try DeviceDirectory.tokens(path: path) }
            if let path = options.hwidsPath { try directory.load(path: path) }
            if let devices = options.fleetDevices {
                directory.addFleet(devices: devices, seed: options.fleetSeed, scenario: options.fleetScenario)
            }
            if options.reportTo?.isTLS == true {
                do { tls = try TLSClientContext(caFile: options.caFile) } catch { throw FleetOptions.Problem("--ca \(error.description)") }
            }
        } catch {
            return fail(error.description, status: 2)
        }
        if let code = options.printAppConfig {
            do throws(EdgeAdmin.Problem) {
                print(try EdgeAdmin.appConfig(code: code, directory: options.directory).text)
                return 0
            } catch {
                return fail(error.description, status: 2)
            }
        }

        let credentials: EdgeCredentials
        let tlsServer: TLSServerContext
        let server: HTTP2Server
        do {
            credentials = try EdgeCredentials.prepare(directory: options.directory)
            tlsServer = try TLSServerContext(certificateChain: credentials.path(EdgeCredentials.certificateFile),
                                             privateKey: credentials.path(EdgeCredentials.serverKeyFile))
            server = try HTTP2Server(listeners: [.init(host: options.host, port: options.apnsPort), .init(host: options.host, port: options.fcmPort),
                                                 .init(host: options.host, port: options.webPort)],
                                     tls: tlsServer, threads: options.threads,
                                     responseDelayNanoseconds: Int64(options.latencyMilliseconds * 1_000_000))
        } catch {
            return fail("\(error)", status: 1)
        }
        let stats = EdgeStats(reportDelaySeconds: options.reportTo == nil ? nil : options.reportDelaySeconds)
        let apnsURL = "https://\(options.host):\(server.ports[EdgeHandler.apnsListener])"
        let fcmURL = "https://\(options.host):\(server.ports[EdgeHandler.fcmListener])"
        let webPushURL = "https://\(options.host):\(server.ports[EdgeHandler.webListener])"
        let admin = HTTPServer(settings: adminSettings(options)) { request in
            switch (request.method, request.path) {
            case ("GET", "/stats"):
                return .json(stats.json(connections: server.openConnections, connectionsAccepted: server.acceptedConnections))
            case ("GET", "/metrics"):
                return .text(stats.metrics(), contentType: "text/plain; version=0.0.4; charset=utf-8")
            default:
                return .json(["error": "not found: GET /stats and GET /metrics are the edge's admin API"], status: 404)
            }
        }
        do {
            try admin.start()
            try credentials.publish(apnsURL: apnsURL, fcmURL: fcmURL, webPushURL: webPushURL, adminURL: "http://\(options.host):\(admin.port)")
        } catch {
            server.stop()
            return fail("\(error)", status: 1)
        }

        let reporter = options.reportTo.map { target in
            DeviceReporter(target: target, app: options.app ?? "", directory: directory, openRate: options.openRate,
                           delaySeconds: options.reportDelaySeconds, tls: tls, stats: stats)
        }
        let assertions = AssertionCheck(key: credentials.serviceAccountKey, clientEmail: EdgeCredentials.clientEmail, tokenURI: fcmURL + "/token")
        let handler = EdgeHandler(
            apns: APNsEndpoint(tokens: ProviderTokenCheck(key: credentials.apnsKey, teamID: credentials.teamID, keyID: credentials.keyID),
                               topic: EdgeCredentials.topic, deadTokens: deadTokens),
            fcm: FCMEndpoint(assertions: assertions, project: EdgeCredentials.project, tokenPath: "/token", deadTokens: deadTokens),
            huawei: HuaweiEndpoint(appID: EdgeCredentials.huaweiAppID, clientSecret: credentials.huaweiClientSecret, deadTokens: deadTokens),
            web: WebPushEndpoint(origin: webPushURL, seed: options.fleetSeed, vapid: credentials.vapidKey,
                                 vapidPublicKey: credentials.vapidPublicKey, deadEndpoints: deadTokens),
            stats: stats, reporter: reporter)
        server.start(handler: handler)
        reporter?.start(threads: 2)
        FileHandle.standardOutput.write(Data("READY\n".utf8))
        FileHandle.standardError.write(Data(
            "herald-load edge: APNs \(apnsURL), FCM and Huawei \(fcmURL), Web Push \(webPushURL), admin http://\(options.host):\(admin.port)/stats; settings in \(credentials.path("edge.json"))\n".utf8))

        _ = Signals.waitForTermination()
        reporter?.stop()
        admin.stop()
        server.stop()
        return 0
    }

    static func adminSettings(_ options: EdgeOptions) -> HTTPSettings {
        var settings = HTTPSettings()
        settings.host = options.host
        settings.port = options.adminPort
        settings.threads = 1
        return settings
    }

    static func fail(_ message: String, status: Int32) -> Int32 {
        FileHandle.standardError.write(Data("herald-load edge: \(message)\n".utf8))
        return status
    }
}
