import Foundation

/// What both executables do first: block the termination signals (so that only the waiting thread
/// receives them), read the command line, print `--help` or `--version`, and load the configuration.
/// Exits with status 0 after `--help` or `--version` and 2 on any command-line or configuration
/// error, before anything starts.
public enum Startup {
    /// `version` is what `--version` prints after the executable's name.
    public static func configure(executable: String, version: String, summary: String) -> (Configuration, Logger) {
        Signals.blockTerminationSignals()
        func fail(_ message: String) -> Never {
            FileHandle.standardError.write(Data("\(executable): \(message)\n".utf8))
            exit(2)
        }
        let options: CommandLineOptions
        do {
            options = try CommandLineOptions.parse(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment)
        } catch {
            fail("\(error)")
        }
        let configPath: String, levelOverride: LogLevel?
        switch options {
        case .run(let path, let level): (configPath, levelOverride) = (path, level)
        case .help:
            print(CommandLineOptions.usage(executable: executable, summary: summary))
            exit(0)
        case .version:
            print("\(executable) \(version)")
            exit(0)
        }
        let configuration: Configuration
        do {
            configuration = try Configuration.load(path: configPath)
        } catch {
            fail("configuration error: \(error)")
        }
        return (configuration, Logger(label: executable, level: levelOverride ?? configuration.logLevel))
    }
}
