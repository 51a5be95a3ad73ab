import Foundation

/// What both executables do first: block the termination signals (so that only the waiting thread
/// receives them), read the command line, print `--help` or `--version`, and load the configuration.
/// Exits with status 0 after `--help` or `--version` and 2 on any command-line or configuration
/// error, before anything starts.
public enum Startup {
    /// `version` is what `--version` prints after the executable's name.
    /// `generateCurveKey` writes a new secret key to the file given and returns its public key
    /// (`--generate-curve-key`; it lives with the queue, which Core does not link). `validate` adds
    /// the executable's own checks of the configuration (exit 2 like any configuration error).
    /// `backup` copies the database to the path given and returns a one-line summary (`--backup`;
    /// nil where the executable does not offer it). `generateVAPIDKey` writes a new VAPID key to the
    /// file given and returns its public key (`--generate-vapid-key`; nil where not offered).
    /// `takesName`: the executable accepts `--name`, returned as the third value (nil when not given).
    public static func configure(executable: String, version: String, summary: String, generateCurveKey: (String) throws -> String,
                                 backup: ((Configuration, String) throws -> String)? = nil,
                                 generateVAPIDKey: ((String) throws -> String)? = nil, takesName: Bool = false,
                                 validate: (Configuration) throws(ConfigurationError) -> Void) -> (Configuration, Logger, String?) {
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
        var backupDestination: String?, processName: String?
        switch options {
        case .run(let path, let level, let name):
            guard name == nil || takesName else { fail("--name: only herald-worker takes it") }
            (configPath, levelOverride, processName) = (path, level, name)
        case .backup(let path, let destination):
            guard backup != nil else { fail("--backup: only herald-ingest takes it") }
            (configPath, levelOverride, backupDestination) = (path, nil, destination)
        case .help:
            print(CommandLineOptions.usage(executable: executable, summary: summary, offersBackup: backup != nil, offersName: takesName))
            exit(0)
        case .version:
            print("\(executable) \(version)")
            exit(0)
        case .generateVAPIDKey(let path):
            guard let generateVAPIDKey else { fail("--generate-vapid-key: only herald-ingest takes it") }
            do {
                print(try generateVAPIDKey(path))
                exit(0)
            } catch {
                FileHandle.standardError.write(Data("\(executable): cannot write a VAPID key to \(path): \(error)\n".utf8))
                exit(1)
            }
        case .generateCurveKey(let path):
            do {
                print(try generateCurveKey(path))
                exit(0)
            } catch {
                FileHandle.standardError.write(Data("\(executable): cannot write a CURVE key to \(path): \(error)\n".utf8))
                exit(1)
            }
        }
        let configuration: Configuration
        do {
            configuration = try Configuration.load(path: configPath)
            try validate(configuration)
        } catch {
            fail("configuration error: \(error)")
        }
        // Refused before anything connects: opening the database would already migrate it.
        if backupDestination != nil, configuration.database.url != nil {
            fail("--backup copies a SQLite database (database.path) only; with database.url (PostgreSQL) back up with the server's "
                + "tools, e.g. pg_dump --format=custom --file=herald.dump with the same connection settings")
        }
        if let backup, let backupDestination {
            do {
                print(try backup(configuration, backupDestination))
                exit(0)
            } catch {
                FileHandle.standardError.write(Data("\(executable): backup failed: \(error)\n".utf8))
                exit(1)
            }
        }
        return (configuration, Logger(label: executable, level: levelOverride ?? configuration.logLevel), processName)
    }
}
