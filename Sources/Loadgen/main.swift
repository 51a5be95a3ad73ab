import BuildInfo
import Core
import Foundation

// herald-load: drives a running Herald over its public HTTP API. `fleet` simulates app installs,
// `edge` plays APNs and FCM, `campaign` sends a campaign and follows it, `compare` and `merge` read
// fleet results.

Signals.blockTerminationSignals()

let usage = """
    herald-load: load generator for Herald, over its public HTTP API only.

    Usage: herald-load fleet --target URL --app CODE --devices N --duration SECONDS [options]
           herald-load edge --dir DIR [options]
           herald-load campaign --target URL --app CODE --token API_TOKEN [options]
           herald-load compare A.json B.json [--html FILE.html]
           herald-load merge PART.json PART.json ... [--json FILE]
           herald-load SUBCOMMAND --help
           herald-load --version

    Subcommands:
      fleet   simulates app installs talking to Herald as the Pushwoosh iOS and Android SDKs (and the
              OneSignal helper) do: registrations, tags, app opens, sessions of events.
      edge    an APNs and FCM look-alike (HTTP/2, TLS) that checks and answers as Apple and Google do,
              and can report deliveries and opens back to Herald as the devices would.
      campaign  sends a campaign through the Remote API and follows it to the last push.
      compare   compares two fleet results per method (rate, latency, errors) and marks regressions.
      merge     combines the results of one fleet's segments (fleet --segment i/n) into one.

    Flags and output: docs/herald-load.md.
    """

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "fleet":
    exit(FleetCommand.main(Array(arguments.dropFirst())))
case "edge":
    exit(EdgeCommand.main(Array(arguments.dropFirst())))
case "campaign":
    exit(CampaignCommand.main(Array(arguments.dropFirst())))
case "compare":
    exit(CompareCommand.main(Array(arguments.dropFirst())))
case "merge":
    exit(MergeCommand.main(Array(arguments.dropFirst())))
case "--help", "-h", "help":
    print(usage)
    exit(0)
case "--version":
    print("herald-load \(BuildInfo.description)")
    exit(0)
case nil:
    FileHandle.standardError.write(Data("herald-load: a subcommand is required (fleet, edge, campaign, compare, merge); see herald-load --help\n".utf8))
    exit(2)
case let other?:
    FileHandle.standardError.write(Data("herald-load: unknown subcommand \(other) (fleet, edge, campaign, compare, merge); see herald-load --help\n".utf8))
    exit(2)
}
