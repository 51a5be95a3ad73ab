import SDKClient

/// What `herald-load edge` was asked to do, checked: every problem is one line for standard error
/// (exit status 2).
struct EdgeOptions: Equatable {
    /// Where the credentials and `edge.json` live (made when missing).
    var directory: String
    var apnsPort: UInt16 = 0
    var fcmPort: UInt16 = 0
    var adminPort: UInt16 = 0
    /// The Web Push service's port (browsers' subscription endpoints).
    var webPort: UInt16 = 0
    var host = "127.0.0.1"
    /// Added to every answer (a distant server's round trip), milliseconds.
    var latencyMilliseconds: Double = 0
    var threads: Int = 2
    var deadTokensPath: String?
    /// Herald's base URL for the devices' reports; nil reports nothing.
    var reportTo: TargetURL?
    /// The application code the reports carry.
    var app: String?
    /// The fraction of delivered pushes that are also opened (pushStat).
    var openRate: Double = 0
    /// The mean delay from an accepted push to its delivery report, seconds; opens come 2–10× later.
    var reportDelaySeconds: Double = 1
    /// `TOKEN HWID` lines: the devices the reports speak for.
    var hwidsPath: String?
    /// A fleet's devices (`herald-load fleet --devices N --seed K --onesignal F --huawei H`) the reports speak for.
    var fleetDevices: Int?
    /// The fleet's seed: also what the browsers' keys, which the Web Push port decrypts with, derive from.
    var fleetSeed: UInt64 = 1
    /// `--fleet-scenario FILE` (else the built-in model) with `--fleet-onesignal` and `--fleet-huawei` applied.
    var fleetScenario = Scenario.builtIn
    var fleetOneSignal: Double { fleetScenario.oneSignalShare }
    var fleetHuawei: Double { fleetScenario.huaweiShare }
    var caFile: String?
    /// `--print-app-config CODE`: print that app's `apns`, `fcm` and `huawei` entries from `edge.json` and exit.
    var printAppConfig: String?

    /// Parses the arguments after `edge`. Returns nil for `--help`.
    static func parse(_ arguments: [String], cores: Int) throws(FleetOptions.Problem) -> EdgeOptions? {
        typealias Problem = FleetOptions.Problem
        var options = EdgeOptions(directory: "")
        options.threads = max(1, cores)
        var directory: String?
        var serverFlags: [String] = []
        var scenarioPath: String?
        var shares: [(WritableKeyPath<Scenario, Double>, Double)] = []
        var cursor = ArgumentCursor(arguments)
        while cursor.next() {
            let name = cursor.name
            if name != "--dir" && name != "--print-app-config" { serverFlags.append(name) }
            switch name {
            case "--help", "-h":
                return nil
            case "--dir":
                directory = try FleetOptions.path(name, try cursor.value())
            case "--apns-port":
                options.apnsPort = try port(name, try cursor.value())
            case "--fcm-port":
                options.fcmPort = try port(name, try cursor.value())
            case "--admin-port":
                options.adminPort = try port(name, try cursor.value())
            case "--web-port":
                options.webPort = try port(name, try cursor.value())
            case "--host":
                let text = try cursor.value()
                guard text.split(separator: ".").count == 4, text.split(separator: ".").allSatisfy({ UInt8($0) != nil }) else {
                    throw Problem("--host must be an IPv4 address such as 127.0.0.1, got '\(text)'")
                }
                options.host = text
            case "--latency-ms":
                let text = try cursor.value()
                guard let value = Double(text), value.isFinite, value >= 0, value <= 60_000 else {
                    throw Problem("--latency-ms must be milliseconds between 0 and 60000, got '\(text)'")
                }
                options.latencyMilliseconds = value
            case "--threads", "-t":
                options.threads = try FleetOptions.positiveInt(name, try cursor.value(), max: 256)
            case "--dead-tokens":
                options.deadTokensPath = try FleetOptions.path(name, try cursor.value())
            case "--report-to":
                let text = try cursor.value()
                do { options.reportTo = try TargetURL(parsing: text) } catch { throw Problem("--report-to \(error.description)") }
            case "--app":
                options.app = try FleetOptions.appCode(name, try cursor.value())
            case "--open-rate":
                options.openRate = try fraction(name, try cursor.value())
            case "--report-delay":
                let text = try cursor.value()
                guard let value = Double(text), value.isFinite, value >= 0, value <= 3600 else {
                    throw Problem("--report-delay must be seconds between 0 and 3600, got '\(text)'")
                }
                options.reportDelaySeconds = value
            case "--hwids":
                options.hwidsPath = try FleetOptions.path(name, try cursor.value())
            case "--fleet-devices":
                options.fleetDevices = try FleetOptions.positiveInt(name, try cursor.value(), max: 100_000_000)
            case "--fleet-seed":
                let text = try cursor.value()
                guard let seed = UInt64(text) else { throw Problem("--fleet-seed must be a whole number ≥ 0, got '\(text)'") }
                options.fleetSeed = seed
            case "--fleet-onesignal":
                shares.append((\.oneSignalShare, try fraction(name, try cursor.value())))
            case "--fleet-huawei":
                shares.append((\.huaweiShare, try fraction(name, try cursor.value())))
            case "--fleet-scenario":
                scenarioPath = try FleetOptions.path(name, try cursor.value())
            case "--ca":
                options.caFile = try FleetOptions.path(name, try cursor.value())
            case "--print-app-config":
                options.printAppConfig = try FleetOptions.appCode(name, try cursor.value())
            default:
                throw Problem("unknown option \(cursor.argument) (see herald-load edge --help)")
            }
        }
        guard let directory else { throw Problem("--dir DIR is required (where the edge keeps its keys, certificates and edge.json)") }
        options.directory = directory
        if let scenarioPath { options.fleetScenario = try Scenario(path: scenarioPath, flag: "--fleet-scenario") }
        for (share, value) in shares { options.fleetScenario[keyPath: share] = value }
        if options.printAppConfig != nil, let flag = serverFlags.first {
            throw Problem("--print-app-config reads DIR/edge.json and takes only --dir, not \(flag)")
        }
        if let target = options.reportTo {
            guard options.app != nil else { throw Problem("--report-to needs --app CODE (the application the devices report to)") }
            guard options.hwidsPath != nil || options.fleetDevices != nil else {
                throw Problem("--report-to needs the devices' hwids: --hwids FILE or --fleet-devices N (see herald-load edge --help)")
            }
            if options.caFile != nil && !target.isTLS { throw Problem("--ca needs an https:// --report-to") }
        } else {
            for (given, flag) in [(options.app != nil, "--app"), (options.openRate > 0, "--open-rate"), (options.hwidsPath != nil, "--hwids"),
                                  (options.fleetDevices != nil, "--fleet-devices"), (options.caFile != nil, "--ca")] where given {
                throw Problem("\(flag) only matters with --report-to URL")
            }
        }
        let ports = [options.apnsPort, options.fcmPort, options.adminPort, options.webPort].filter { $0 != 0 }
        if Set(ports).count != ports.count { throw Problem("--apns-port, --fcm-port, --web-port and --admin-port must differ") }
        return options
    }

    static func port(_ name: String, _ text: String) throws(FleetOptions.Problem) -> UInt16 {
        guard let port = UInt16(text) else { throw FleetOptions.Problem("\(name) must be a port number (0 to 65535), got '\(text)'") }
        return port
    }

    static func fraction(_ name: String, _ text: String) throws(FleetOptions.Problem) -> Double {
        guard let value = Double(text), value >= 0, value <= 1 else {
            throw FleetOptions.Problem("\(name) must be a fraction between 0 and 1, got '\(text)'")
        }
        return value
    }

    /// The `--help` text.
    static let usage = """
        herald-load edge: an APNs, FCM, Huawei Push Kit and Web Push look-alike over HTTP/2 and TLS that checks
        what Apple, Google, Huawei and browsers' push services check and answers as they do, so that a Herald
        deployment can deliver campaigns to it at full speed.

        Usage: herald-load edge --dir DIR [options]
               herald-load edge --dir DIR --print-app-config CODE

        On start it makes in DIR what a Herald app configuration needs, unless it is there already (a CA and
        server certificate, an APNs .p8 key with its team and key id, an FCM service-account JSON whose
        token_uri points at the edge, a Huawei client secret, a VAPID key), writes DIR/edge.json with the URLs and paths, and prints READY.
        Ctrl-C or SIGTERM stops it.

        Servers:
          --dir DIR            the folder of credentials and edge.json (made when missing). Required.
          --apns-port P        the APNs port (default: a free port; edge.json says which).
          --fcm-port P         the FCM and OAuth token port (default: a free port).
          --web-port P         the Web Push port: browsers' endpoints https://HOST:P/push/<index>.<id>, each
                               POST checked for its VAPID token (the key of DIR/vapid.pem) and decrypted
                               with the browser's key derived from --fleet-seed (default: a free port).
          --admin-port P       the plain-HTTP admin port with GET /stats and GET /metrics (default: a free port).
          --host ADDRESS       the IPv4 address to listen on (default 127.0.0.1).
          --latency-ms X       answer every push X ms late, as a distant server would (default 0).
          -t, --threads T      event-loop threads (default: the number of cores).
          --dead-tokens FILE   push tokens (one a line) answered as uninstalled apps: APNs 410
                               Unregistered, FCM 404 UNREGISTERED, Web Push (endpoint URLs) 410 Gone.

        The devices' side (reports to Herald):
          --report-to URL      post messageDeliveryEvent to Herald for every accepted push, as the SDK does
                               when the push arrives, with the payload's hash (p) and the device's hwid.
          --app CODE           the application code the reports carry. Required with --report-to.
          --open-rate F        also post pushStat (opened) for the fraction F (0..1) of delivered pushes.
          --report-delay S     mean seconds from an accepted push to its delivery report (default 1; each
                               report 0.5-1.5x that; opens 2-10x that after the push).
          --hwids FILE         "TOKEN HWID" lines: the devices behind the push tokens.
          --fleet-devices N    or: the devices of `herald-load fleet --devices N`, with
          --fleet-seed K       its --seed (default 1; browsers' keys derive from it even without reports),
          --fleet-scenario F   its --scenario file,
          --fleet-onesignal F  its --onesignal (default 0) and
          --fleet-huawei F     its --huawei (default 0).
          --ca FILE            for an https --report-to: trust this CA file instead of the system store.

        Herald's side:
          --print-app-config CODE  print, from DIR/edge.json, the entries that make Herald's app CODE
                               deliver to this edge ({"code", "apns", "fcm", "huawei", "web"}: merge them into that app in
                               Herald's configuration, then restart the workers, which deliver), and exit.
                               With fixed --apns-port, --fcm-port and --web-port the entries stay right across
                               restarts.

        Exit status: 0 after Ctrl-C or SIGTERM, 1 when it cannot start, 2 for a bad command line (or, with
        --print-app-config, no edge.json in DIR).
        """
}
