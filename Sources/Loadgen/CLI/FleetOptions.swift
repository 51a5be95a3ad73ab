import SDKClient
import WebPush

/// What `herald-load fleet` was asked to do, checked: every problem is one line for standard error
/// (exit status 2).
struct FleetOptions: Equatable {
    var target: TargetURL
    var app: String
    var devices: Int
    var durationSeconds: Double
    /// Requests per second across all connections (open loop); nil runs flat out (closed loop).
    var rate: Double?
    /// `--stages`: an open loop whose rate ramps from stage to stage (instead of `--rate` and `--duration`).
    var stages: RateStages?
    var connections: Int = 64
    var threads: Int = 2
    var seed: UInt64 = 1
    var jsonPath: String?
    var reportPath: String?
    /// `--scenario FILE` (else the built-in model), with `--onesignal`, `--huawei` and `--web` applied.
    var scenario = Scenario.builtIn
    var scenarioPath: String?
    /// `--web-push URL`: the push service browsers subscribe at (the edge's `web_push_url`).
    var webPush: String?
    /// The fraction of devices that talk through the OneSignal helper's routes instead of the SDK.
    var oneSignalFraction: Double { scenario.oneSignalShare }
    /// The fraction of Android devices that are Huawei phones (`device_type` 17, Push Kit tokens).
    var huaweiFraction: Double { scenario.huaweiShare }
    /// The fraction of devices that are browsers (`device_type` 11 or 12, Web Push subscriptions).
    var webFraction: Double { scenario.webShare }
    var caFile: String?
    var insecure = false
    var timeoutSeconds: Double = 10
    var allowErrors = false
    /// Whether to draw the live progress line (only on a terminal).
    var progress = true
    /// Whether requests start on a schedule (`--rate` or `--stages`) rather than as replies come.
    var isOpenLoop: Bool { rate != nil || stages != nil }

    /// The schedule's words for the summary: `open loop at 5,000 req/s`, `open loop in stages 30s:1000,…`, `closed loop`.
    var modeDescription: String {
        if let stages { return "open loop in stages \(stages)" }
        return rate.map { "open loop at \(TextFormat.rate($0)) req/s" } ?? "closed loop"
    }

    /// `--threshold`, in the order given.
    var thresholds: [Threshold] = []
    /// `--metrics-listen HOST:PORT`: where `/metrics` is served during the run.
    var metricsListen: ListenAddress?
    /// `--segment i/n`: the part of the fleet this process runs (`devices`, `rate` and `stages` are then the part's).
    var segment: Segment?

    /// An IPv4 address and port to listen on.
    struct ListenAddress: Equatable {
        let host: String
        let port: UInt16
    }

    struct Problem: Error, Equatable, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Parses the arguments after `fleet`. Returns nil for `--help`.
    static func parse(_ arguments: [String], cores: Int) throws(Problem) -> FleetOptions? {
        var app: String?
        var devices: Int?
        var duration: Double?
        var options = FleetOptions(target: TargetURL(isTLS: false, host: "", port: 0), app: "", devices: 0, durationSeconds: 0)
        var threadsGiven = false
        var segmentText: String?
        var shares: [(WritableKeyPath<Scenario, Double>, Double)] = []
        var cursor = ArgumentCursor(arguments)
        var shared = TargetFlags()
        while cursor.next() {
            let name = cursor.name
            if try shared.read(&cursor) { continue }
            switch name {
            case "--help", "-h":
                return nil
            case "--app":
                app = try appCode(name, try cursor.value())
            case "--devices":
                devices = try positiveInt(name, try cursor.value(), max: 100_000_000)
            case "--duration":
                duration = try seconds(name, try cursor.value())
            case "--rate":
                let text = try cursor.value()
                guard let rate = Double(text), rate.isFinite, rate > 0, rate <= 10_000_000 else {
                    throw Problem("--rate must be requests per second, a number above 0, got '\(text)'")
                }
                options.rate = rate
            case "--connections", "-c":
                options.connections = try positiveInt(name, try cursor.value(), max: 100_000)
            case "--threads", "-t":
                options.threads = try positiveInt(name, try cursor.value(), max: 256)
                threadsGiven = true
            case "--seed":
                let text = try cursor.value()
                guard let seed = UInt64(text) else { throw Problem("--seed must be a whole number ≥ 0, got '\(text)'") }
                options.seed = seed
            case "--json":
                options.jsonPath = try path(name, try cursor.value())
            case "--report":
                options.reportPath = try path(name, try cursor.value())
            case "--onesignal":
                shares.append((\.oneSignalShare, try EdgeOptions.fraction(name, try cursor.value())))
            case "--huawei":
                shares.append((\.huaweiShare, try EdgeOptions.fraction(name, try cursor.value())))
            case "--web":
                shares.append((\.webShare, try EdgeOptions.fraction(name, try cursor.value())))
            case "--web-push":
                let text = try cursor.value()
                guard WebSubscription.origin(of: text) != nil, !text.dropFirst("https://".count).contains("/"),
                      text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || ".-:[]/".contains($0)) }) else {
                    throw Problem("--web-push must be a push service's https://HOST:PORT (edge.json's web_push_url), got '\(text)'")
                }
                options.webPush = text
            case "--scenario":
                options.scenarioPath = try path(name, try cursor.value())
            case "--timeout":
                options.timeoutSeconds = try seconds(name, try cursor.value())
            case "--metrics-listen":
                let text = try cursor.value()
                guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]),
                      text[..<colon].split(separator: ".").count == 4, text[..<colon].split(separator: ".").allSatisfy({ UInt8($0) != nil }) else {
                    throw Problem("--metrics-listen must be IPv4-ADDRESS:PORT such as 127.0.0.1:9464, got '\(text)'")
                }
                options.metricsListen = ListenAddress(host: String(text[..<colon]), port: port)
            case "--stages":
                options.stages = try RateStages(parsing: try cursor.value())
            case "--threshold":
                options.thresholds.append(try Threshold(parsing: try cursor.value()))
            case "--segment":
                segmentText = try cursor.value()
            default:
                throw Problem("unknown option \(cursor.argument) (see herald-load fleet --help)")
            }
        }
        let target = try shared.checked()
        if let file = options.scenarioPath { options.scenario = try Scenario(path: file) }
        for (share, value) in shares { options.scenario[keyPath: share] = value }
        if options.webFraction > 0 && options.webPush == nil {
            throw Problem("browsers (--web or the scenario's platforms.web) need --web-push URL: the edge's web_push_url")
        }
        guard let app else { throw Problem("--app CODE is required (the application code in Herald's configuration)") }
        guard let devices else { throw Problem("--devices N is required") }
        if let stages = options.stages {
            if options.rate != nil { throw Problem("--stages and --rate contradict each other: the stages set the rate") }
            if duration != nil { throw Problem("--stages and --duration contradict each other: the stages last \(TextFormat.fixed(stages.seconds, 1)) s") }
            duration = stages.seconds
        }
        guard let duration else { throw Problem("--duration SECONDS is required") }
        options.caFile = shared.caFile
        options.insecure = shared.insecure
        options.allowErrors = shared.allowErrors
        options.progress = shared.progress
        options.target = target
        options.app = app
        options.devices = devices
        options.durationSeconds = duration
        if let segmentText {
            let segment = try Segment(parsing: segmentText, fleetDevices: devices)
            try segment.apply(to: &options)
            options.segment = segment
        }
        // A connection serves its own devices, so there are never more connections than devices.
        options.connections = min(options.connections, devices)
        if !threadsGiven { options.threads = max(1, cores) }
        options.threads = min(options.threads, options.connections)
        let scheduled = options.stages?.totalRequests ?? options.rate.map { $0 * options.durationSeconds }
        if let scheduled, scheduled < Double(options.connections) {
            // Every connection should get at least one request in the run.
            options.connections = max(1, min(options.connections, Int(scheduled)))
            options.threads = min(options.threads, options.connections)
        }
        return options
    }

    /// An application code as the SDKs send it: no spaces or JSON specials, at most 64 bytes.
    static func appCode(_ name: String, _ text: String) throws(Problem) -> String {
        guard !text.isEmpty, text.utf8.count <= 64, !text.contains(where: { $0 == "\"" || $0 == "\\" || $0.isWhitespace }) else {
            throw Problem("\(name) must be an application code such as ABCDE-12345, got '\(text)'")
        }
        return text
    }

    static func positiveInt(_ name: String, _ text: String, max: Int) throws(Problem) -> Int {
        guard let value = Int(text.replacingOccurrences(of: "_", with: "")), value > 0 else {
            throw Problem("\(name) must be a whole number above 0, got '\(text)'")
        }
        guard value <= max else { throw Problem("\(name) must be at most \(max), got \(value)") }
        return value
    }

    /// `30`, `30s`, `1.5`, `2m`, `1h`.
    /// Seconds as written on the command line (`30`, `2.5`, `30s`, `2m`, `1h`), above 0 (or 0 too
    /// with `allowZero`) and at most a week.
    static func seconds(_ name: String, _ text: String, allowZero: Bool = false) throws(Problem) -> Double {
        var number = Substring(text)
        var unit = 1.0
        if let last = number.last, !last.isNumber && last != "." {
            switch last {
            case "s": unit = 1
            case "m": unit = 60
            case "h": unit = 3600
            default: throw Problem("\(name) must be seconds (such as 30, 2.5, 30s, 2m, 1h), got '\(text)'")
            }
            number = number.dropLast()
        }
        guard let value = Double(number), value.isFinite, value > 0 || (allowZero && value == 0), value * unit <= 7 * 86_400 else {
            throw Problem("\(name) must be seconds \(allowZero ? "from 0" : "above 0") (such as 30, 2.5, 30s, 2m, 1h), got '\(text)'")
        }
        return value * unit
    }

    static func path(_ name: String, _ text: String) throws(Problem) -> String {
        guard !text.isEmpty else { throw Problem("\(name) needs a file name") }
        return text
    }

    /// The `--help` text.
    static let usage = """
        herald-load fleet: simulates app installs talking to Herald as the Pushwoosh iOS and Android SDKs do
        (and, with --onesignal, the OneSignal helper), and measures every request.

        Usage: herald-load fleet --target URL --app CODE --devices N --duration SECONDS [options]
               herald-load fleet --target URL --app CODE --devices N --stages LIST [options]

        Required:
          --target URL         Herald's base URL: http://HOST:PORT or https://HOST[:PORT], optionally with a path
                               prefix; the SDK form ending in /json/1.3/ is accepted too.
          --app CODE           the application code the devices use (an app in Herald's configuration).
          --devices N          simulated app installs. Each registers first, then runs sessions.
          --duration SECONDS   how long to send: 30, 2.5, 30s, 2m or 1h.

        Load:
          --rate R             open loop: start R requests per second in total, on schedule whatever the
                               replies do; latency counts from the scheduled start (no coordinated omission).
                               Without --rate: closed loop, each connection sends its next request as soon
                               as the last reply arrived (flat out).
          --stages LIST        open loop with ramps, instead of --rate and --duration: DURATION:RATE stages,
                               each moving the rate in a straight line from the previous stage's (0 at the
                               start) to its own, such as '30s:1000,2m:5000,30s:0'.
          -c, --connections C  keep-alive connections (default 64, at most --devices).
          -t, --threads T      event-loop threads (default: the number of cores).
          --seed K             the seed every device, token, tag and session is derived from (default 1).
          --onesignal F        the fraction F (0..1) of devices that talk through the OneSignal helper's
                               routes (/onesignal/adddevice, /onesignal/editdevice) instead of the SDK.
          --huawei F           the fraction F (0..1) of Android devices that are Huawei phones without
                               Google services: device_type 17 with a Push Kit token (default 0).
          --segment i/n        run part i of n of the fleet (n processes, on n machines): the part's share of
                               the devices (--devices counts the whole fleet) and of the rate or stages;
                               combine the parts' --json files with herald-load merge.
          --web F              the fraction F (0..1) of devices that are browsers with the Pushwoosh Web SDK
                               (Chrome device_type 11, Firefox 12), subscribed at --web-push (default 0).
          --web-push URL       the push service browsers subscribe at: herald-load edge's web_push_url.
          --scenario FILE      the model of the fleet as JSON: platform shares, OneSignal share, opt-out rate,
                               tag churn, mix of SDK calls (ops/load/default-scenario.json is the built-in one;
                               --onesignal, --huawei and --web override it).
          --timeout SECONDS    a request (or a connection attempt) without a reply by then counts as a
                               timeout and its connection is opened anew (default 10).

        TLS (https:// targets):
          --ca FILE            trust the CA certificates in FILE (PEM) instead of the system store.
          -k, --insecure       do not check the server's certificate.

        Output:
          --json FILE          write the results as JSON (see docs/herald-load.md).
          --report FILE.html   write a self-contained HTML page with charts (no network needed to open it).
          -q, --no-progress    no live progress line (it is only drawn on a terminal anyway).
          --metrics-listen A:P serve Prometheus /metrics at IPv4 address A, port P while the run lasts:
                               requests per method by result, latency histograms, the scheduled rate.
          --allow-errors       exit 0 even when requests failed.
          --threshold EXPR     a pass/fail criterion, checked at the end and printed as a table; repeatable.
                               [METHOD.]FIGURE OP VALUE: METHOD a method as the summary names it, or total
                               (the default); FIGURE pN (p50, p99, p99.9…), max or mean (VALUE in us, ms or s),
                               errors (VALUE 0.1% or 0.001) or rate (req/s); OP <, <=, > or >=. Examples:
                               'registerDevice.p99<50ms' 'errors<0.1%' 'p99.9<=200ms' 'rate>=4900'.

        Exit status: 0 when every request succeeded (HTTP 200 and status_code 200) and every threshold
        held, 1 when a request failed (unless --allow-errors), a threshold failed or the results could not
        be written, 2 for a bad command line.
        """
}
