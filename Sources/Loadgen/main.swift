import BuildInfo
import Core
import Foundation

// herald-load: drives a running Herald over its public HTTP API. `fleet` simulates app installs.

Signals.blockTerminationSignals()

let usage = """
    herald-load: load generator for Herald, over its public HTTP API only.

    Usage: herald-load fleet --target URL --app CODE --devices N --duration SECONDS [options]
           herald-load fleet --help
           herald-load --version

    Subcommands:
      fleet   simulates app installs talking to Herald as the Pushwoosh iOS and Android SDKs (and the
              OneSignal helper) do: registrations, tags, app opens, sessions of events.

    Flags and output: docs/herald-load.md.
    """

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "fleet":
    exit(FleetCommand.main(Array(arguments.dropFirst())))
case "--help", "-h", "help":
    print(usage)
    exit(0)
case "--version":
    print("herald-load \(BuildInfo.description)")
    exit(0)
case nil:
    FileHandle.standardError.write(Data("herald-load: a subcommand is required (fleet); see herald-load --help\n".utf8))
    exit(2)
case let other?:
    FileHandle.standardError.write(Data("herald-load: unknown subcommand \(other) (fleet); see herald-load --help\n".utf8))
    exit(2)
}
