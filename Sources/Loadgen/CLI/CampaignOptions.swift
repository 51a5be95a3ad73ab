import Core
import SDKClient

/// What `herald-load campaign` was asked to do, checked: every problem is one line for standard
/// error (exit status 2).
struct CampaignOptions: Equatable {
    var target: TargetURL
    var app: String
    /// The app's Remote API token.
    var token: String
    /// `conditions` of the notification (Pushwoosh tag conditions), or nil for every device.
    var conditions: JSON?
    /// The edge's `--dir`: its `edge.json` names the admin URL whose `/stats` is followed.
    var edgeDirectory: String?
    var jsonPath: String?
    var content = "herald-load campaign"
    /// How long to follow the campaign before giving up.
    var timeoutSeconds: Double = 600
    /// `--report-wait`: how long to keep reading the funnel for delivery and open reports once the
    /// last push went out; nil for the default, which depends on the edge (`CampaignFollower`).
    var reportWaitSeconds: Double?
    var caFile: String?
    var insecure = false
    var allowErrors = false
    var progress = true

    /// Parses the arguments after `campaign`. Returns nil for `--help`.
    static func parse(_ arguments: [String]) throws(FleetOptions.Problem) -> CampaignOptions? {
        typealias Problem = FleetOptions.Problem
        var app: String?
        var token: String?
        var options = CampaignOptions(target: TargetURL(isTLS: false, host: "", port: 0), app: "", token: "")
        var cursor = ArgumentCursor(arguments)
        var shared = TargetFlags()
        while cursor.next() {
            let name = cursor.name
            if try shared.read(&cursor) { continue }
            switch name {
            case "--help", "-h":
                return nil
            case "--app":
                app = try FleetOptions.appCode(name, try cursor.value())
            case "--token":
                let text = try cursor.value()
                guard !text.isEmpty, !text.contains(where: \.isNewline) else { throw Problem("--token must be the app's API token") }
                token = text
            case "--conditions":
                let text = try cursor.value()
                guard let parsed = try? JSON.parse(text), case .array = parsed else {
                    throw Problem("--conditions must be a JSON array of Pushwoosh conditions, such as '[[\"City\", \"EQ\", \"Paris\"]]'")
                }
                options.conditions = parsed
            case "--edge-dir":
                options.edgeDirectory = try FleetOptions.path(name, try cursor.value())
            case "--json":
                options.jsonPath = try FleetOptions.path(name, try cursor.value())
            case "--content":
                let text = try cursor.value()
                guard !text.isEmpty else { throw Problem("--content needs a text") }
                options.content = text
            case "--timeout":
                options.timeoutSeconds = try FleetOptions.seconds(name, try cursor.value())
            case "--report-wait":
                options.reportWaitSeconds = try FleetOptions.seconds(name, try cursor.value(), allowZero: true)
            default:
                throw Problem("unknown option \(cursor.argument) (see herald-load campaign --help)")
            }
        }
        let target = try shared.checked()
        guard let app else { throw Problem("--app CODE is required (the application code in Herald's configuration)") }
        guard let token else { throw Problem("--token API_TOKEN is required (the app's api_token, for the Remote API)") }
        options.caFile = shared.caFile
        options.insecure = shared.insecure
        options.allowErrors = shared.allowErrors
        options.progress = shared.progress
        options.target = target
        options.app = app
        options.token = token
        return options
    }

    /// The `--help` text.
    static let usage = """
        herald-load campaign: sends one campaign through Herald's Remote API (createMessage) and follows it to
        the last push: Herald's funnel (GET /api/v1/messages/<code>) and, with --edge-dir, what the edge received.

        Usage: herald-load campaign --target URL --app CODE --token API_TOKEN [options]

        Required:
          --target URL         Herald's base URL (http://HOST:PORT or https://HOST[:PORT], optional path prefix).
          --app CODE           the application code.
          --token API_TOKEN    the app's api_token (Remote API and funnel).

        Campaign:
          --conditions JSON    the notification's tag conditions (a JSON array); default: every device.
          --content TEXT       the message text (default "herald-load campaign").
          --edge-dir DIR       the folder of a running `herald-load edge`: follow its /stats too, for the
                               time to the first push, 50 %, 99 % and all, and compare its counts at the end.
          --timeout SECONDS    give up following after this long (default 600; 30, 2m, 1h).
          --report-wait S      once the last push is out, keep following the devices' delivery and open
                               reports this long at most (default: with an edge that reports, 10 times its
                               --report-delay plus 5 s, ending as soon as every report is counted; else 0).

        TLS (https:// targets):
          --ca FILE            trust the CA certificates in FILE (PEM) instead of the system store.
          -k, --insecure       do not check the server's certificate.

        Output:
          --json FILE          write the results as JSON (see docs/herald-load.md).
          -q, --no-progress    no live progress line (it is only drawn on a terminal anyway).
          --allow-errors       exit 0 even when pushes failed or the counts disagree.

        Exit status: 0 when the campaign finished with every push sent (and, with --edge-dir, the edge
        accepted exactly what Herald counts as sent), 1 otherwise (unless --allow-errors) or when the
        results could not be written, 2 for a bad command line.
        """
}
