/// What the command line of `herald-ingest` / `herald-worker` asks for.
public enum CommandLineOptions: Equatable, Sendable {
    /// `name`: `--name`, the worker's stable name (nil when not given).
    case run(configPath: String, logLevel: LogLevel?, name: String? = nil)
    case help
    case version
    /// Write a new CURVE secret key to this file and print its public key.
    case generateCurveKey(path: String)
    /// Write a new VAPID (P-256) private key to this file and print its public key (herald-ingest).
    case generateVAPIDKey(path: String)
    /// Copy the database, consistently and while everything runs, to `destination`.
    case backup(configPath: String, destination: String)

    /// Parses `--config FILE`, `--log-level LEVEL`, `--name NAME`, `--backup FILE`, `--generate-curve-key FILE`,
    /// `--generate-vapid-key FILE`, `--help` and `--version`; `HERALD_CONFIG` names the file when `--config` is absent. Throws a
    /// message suitable for standard error.
    public static func parse(_ arguments: [String], environment: [String: String]) throws(ConfigurationError) -> CommandLineOptions {
        var configPath: String?
        var logLevel: LogLevel?
        var backup: String?
        var processName: String?
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            var name = argument
            var inlineValue: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            func value() throws(ConfigurationError) -> String {
                if let inlineValue { return inlineValue }
                index += 1
                guard index < arguments.count else { throw ConfigurationError(key: name, problem: "needs a value") }
                return arguments[index]
            }
            switch name {
            case "--help", "-h":
                return .help
            case "--version":
                return .version
            case "--backup":
                backup = try value()
                guard backup?.isEmpty == false else { throw ConfigurationError(key: name, problem: "needs a file name") }
            case "--generate-curve-key":
                let path = try value()
                guard !path.isEmpty else { throw ConfigurationError(key: name, problem: "needs a file name") }
                return .generateCurveKey(path: path)
            case "--generate-vapid-key":
                let path = try value()
                guard !path.isEmpty else { throw ConfigurationError(key: name, problem: "needs a file name") }
                return .generateVAPIDKey(path: path)
            case "--config", "-c":
                configPath = try value()
            case "--name":
                let text = try value()
                guard QueueMessage.isWorkerID(text) else {
                    throw ConfigurationError(key: name, problem: "must be 1 to 200 letters, digits or . - _ :")
                }
                processName = text
            case "--log-level":
                let text = try value()
                guard let level = LogLevel(name: text) else {
                    throw ConfigurationError(key: "--log-level", problem: "must be one of NONE, ERROR, WARNING, INFO, DEBUG, VERBOSE")
                }
                logLevel = level
            default:
                throw ConfigurationError(key: argument, problem: "unknown option (see --help)")
            }
            index += 1
        }
        guard let path = configPath ?? environment["HERALD_CONFIG"], !path.isEmpty else {
            throw ConfigurationError(key: "--config", problem: "no configuration file: pass --config FILE or set HERALD_CONFIG")
        }
        if let backup { return .backup(configPath: path, destination: backup) }
        return .run(configPath: path, logLevel: logLevel, name: processName)
    }

    /// The `--help` text shared by both executables; `offersBackup` for herald-ingest, which takes
    /// `--backup` and `--generate-vapid-key`, `offersName` for the one that takes `--name`.
    public static func usage(executable: String, summary: String, offersBackup: Bool, offersName: Bool = false) -> String {
        let nameOption = !offersName ? "" : """

                  --name NAME       this worker's name on ingest's /metrics (1 to 200 letters, digits or . - _ :),
                                    the same across restarts. Default: the host name, plus the instance of the
                                    systemd template unit it runs in (herald-worker@2.service on vm-7: vm-7-2).
            """
        let backupUsage = offersBackup ? "\n       \(executable) --config FILE --backup COPY\n       \(executable) --generate-vapid-key FILE" : ""
        let backupOption = !offersBackup ? "" : """

                  --backup COPY     writes a consistent copy of the SQLite database to COPY while everything keeps
                                    running (an existing COPY is never overwritten), then exits. SQLite only: with
                                    database.url (PostgreSQL) it exits 2; back up with pg_dump.
                  --generate-vapid-key FILE
                                    writes a new Web Push VAPID key (EC P-256, PEM) to FILE (mode 0600; an
                                    existing FILE is never overwritten) for web.vapid_private_key_file, and
                                    prints its public key in base64url: the applicationServerKey browsers
                                    subscribe with.
            """
        return """
        \(executable): \(summary)

        Usage: \(executable) --config FILE [--log-level LEVEL]\(offersName ? " [--name NAME]" : "")
               \(executable) --generate-curve-key FILE\(backupUsage)

        Options:
          -c, --config FILE     the Herald configuration file (JSON). Without it, HERALD_CONFIG names the file.
              --log-level LEVEL  overrides the file's log_level: NONE, ERROR, WARNING, INFO, DEBUG or VERBOSE.\(nameOption)
          -h, --help            prints this text.
              --version         prints the version and the git commit this binary was built from.\(backupOption)
              --generate-curve-key FILE
                                writes a new ZeroMQ CURVE secret key to FILE (mode 0600; an existing
                                FILE is never overwritten) and prints its public key, for queue.curve.

        The configuration keys are documented in docs/configuration.md.
        """
    }
}
