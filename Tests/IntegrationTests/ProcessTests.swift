import Foundation
import Core
import Postgres
import SDKClient
import SQLite
import TestSupport
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The executables as an operator runs them: flags, configuration errors, workers joining,
/// and durability across kill -9.
@Suite(.serialized) struct ProcessTests {
    func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        try HeraldProcesses.runToCompletion(executable, arguments: arguments, limit: 60)
    }

    @Test(arguments: ["herald-ingest", "herald-worker"])
    func helpExplainsEveryFlag(_ executable: String) throws {
        let (status, output) = try run(executable, ["--help"])
        #expect(status == 0)
        for flag in ["--config", "--log-level", "HERALD_CONFIG", "VERBOSE", "--help"] {
            #expect(output.contains(flag))
        }
        // Only ingest takes --backup, and its help says it copies SQLite only.
        if executable == "herald-ingest" {
            #expect(output.contains("herald-ingest --config FILE --backup COPY") && output.contains("SQLite only"), "\(output)")
        } else {
            #expect(!output.contains("--backup"), "\(output)")
        }
    }

    @Test(arguments: ["herald-ingest", "herald-worker"])
    func versionNamesTheCommitItWasBuiltFrom(_ executable: String) throws {
        let commit = (try? runTool("/usr/bin/git", ["-C", Repository.root, "rev-parse", "--short=12", "HEAD"]))?
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let (status, output) = try run(executable, ["--version"])
        #expect(status == 0)
        #expect(output.contains("(commit \(commit ?? "unknown")"))
        // One version, written in VERSION: the binaries print it and the API document states it.
        let version = try String(contentsOfFile: Repository.root + "/VERSION", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(output.hasPrefix("\(executable) \(version) (commit "), "\(output)")
        let openAPI = try String(contentsOfFile: Repository.root + "/docs/openapi.yaml", encoding: .utf8)
        #expect(openAPI.contains("\n  version: \(version)\n"), "docs/openapi.yaml's info.version is not \(version)")
    }

    /// A key file a worker cannot read is a configuration error: exit 2 (which the units do not
    /// restart), naming the app and the file, instead of 1 and a restart every few seconds.
    @Test func aWorkerWhoseKeyFileCannotBeReadExitsTwo() throws {
        let missing = "/nonexistent/AuthKey_KEY1234567.p8"
        let herald = try HeraldProcesses(shopDelivery: [
            "apns": ["team_id": "ABCDE12345", "key_id": "KEY1234567", "key_path": .string(missing), "topic": "com.example.shop"],
        ])
        try herald.startIngest()
        let (status, output) = try HeraldProcesses.runToCompletion("herald-worker", arguments: ["--config", herald.configPath], limit: 20)
        #expect(status == 2, "\(output)")
        #expect(output.contains("cannot set up delivery") && output.contains(HeraldProcesses.appCode) && output.contains(missing), "\(output)")
    }

    /// Ingest serves each app's VAPID public key (getConfig), so a VAPID key file it cannot use stops
    /// it at start: exit 2, naming the key and the file, before the database is opened.
    @Test func ingestWhoseVAPIDKeyCannotBeReadExitsTwo() throws {
        let folder = try TemporaryDirectory()
        let notAKey = folder.file("vapid.pem")
        try Data("not a key\n".utf8).write(to: URL(fileURLWithPath: notAKey))
        for file in [folder.file("missing.pem"), notAKey] {
            let herald = try HeraldProcesses(shopDelivery: ["web": ["vapid_private_key_file": .string(file), "subject": "mailto:ops@shop.example"]],
                                             database: .sqlite)
            let (status, output) = try HeraldProcesses.runToCompletion("herald-ingest", arguments: ["--config", herald.configPath], limit: 20)
            #expect(status == 2, "\(output)")
            #expect(output.contains("apps[0].web.vapid_private_key_file") && output.contains(file), "\(output)")
            #expect(!FileManager.default.fileExists(atPath: herald.databasePath))
        }
    }

    /// A worker never creates the database, ingest does: with no SQLite file at `database.path`
    /// (ingest on PostgreSQL and this worker on another host with the sample's path left in) it
    /// waits 10 s for ingest to create it, then stops naming the path and the way out, leaving no file.
    @Test func aWorkerRefusesToCreateTheDatabase() throws {
        let herald = try HeraldProcesses(database: .sqlite)
        let (status, output) = try HeraldProcesses.runToCompletion("herald-worker", arguments: ["--config", herald.configPath], limit: 20)
        #expect(status == 1, "\(output)")
        #expect(output.contains("database.path") && output.contains(herald.databasePath) && output.contains("database.url"), "\(output)")
        #expect(!FileManager.default.fileExists(atPath: herald.databasePath))
    }

    @Test func configurationErrorsNameTheKeyAndExitBeforeStarting() throws {
        let herald = try HeraldProcesses()
        let broken = herald.folder + "/broken.json"
        try #"{"apps": [{"code": "A", "api_token": "t", "sink": "s"}], "http": {"listen": "everywhere"}}"#
            .write(toFile: broken, atomically: true, encoding: .utf8)
        let (status, output) = try run("herald-ingest", ["--config", broken])
        #expect(status == 2)
        #expect(output.contains("http.listen"))
        let (missingStatus, missingOutput) = try run("herald-worker", ["--config", herald.folder + "/absent.json"])
        #expect(missingStatus == 2)
        #expect(missingOutput.contains("absent.json"))
        let (flagStatus, _) = try run("herald-ingest", ["--log-level", "LOUD", "--config", herald.configPath])
        #expect(flagStatus == 2)
    }

    /// A PostgreSQL server that cannot be reached, a malformed URL or an unreadable password file
    /// stops either program at start, naming what is wrong, without printing the URL's password.
    @Test(arguments: ["herald-ingest", "herald-worker"])
    func aDatabaseThatCannotBeOpenedStopsStartUpNamingIt(_ executable: String) throws {
        let herald = try HeraldProcesses()
        let closedPort = try HeraldProcesses.freePort()
        func attempt(_ database: String) throws -> (status: Int32, output: String) {
            let path = herald.folder + "/database.json"
            try #"{"apps": [{"code": "A", "api_token": "t", "sink": "s"}], "database": \#(database)}"#
                .write(toFile: path, atomically: true, encoding: .utf8)
            return try run(executable, ["--config", path])
        }
        let unreachable = try attempt(#"{"url": "postgresql://herald:sup3r-secret@127.0.0.1:\#(closedPort)/herald"}"#)
        #expect(unreachable.status == 1 && unreachable.output.contains("cannot open the database"), "\(unreachable.output)")
        #expect(unreachable.output.contains("database.url") && !unreachable.output.contains("sup3r-secret"), "\(unreachable.output)")
        let malformed = try attempt(#"{"url": "mysql://herald@127.0.0.1/herald"}"#)
        #expect(malformed.status == 2 && malformed.output.contains("database.url"), "\(malformed.output)")
        let noPassword = try attempt(#"{"url": "postgresql://herald@127.0.0.1:\#(closedPort)/herald", "password_file": "absent-pw"}"#)
        #expect(noPassword.status == 1 && noPassword.output.contains("database.password_file")
                && noPassword.output.contains(herald.folder + "/absent-pw"), "\(noPassword.output)")
    }

    @Test func workersJoinAndLeave() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        try herald.startWorker()
        try herald.startWorker()
        var connected = ""
        for _ in 0..<100 {
            let metrics = try herald.client.request("GET", "/metrics").text
            connected = metrics.split(separator: "\n").first { $0.hasPrefix("herald_workers_connected ") }.map(String.init) ?? ""
            if connected == "herald_workers_connected 2" { break }
            usleep(100_000)
        }
        #expect(connected == "herald_workers_connected 2")
        for worker in herald.workers {
            kill(worker.processIdentifier, SIGTERM)
            worker.waitUntilExit()
            #expect(worker.terminationStatus == 0)
        }
        #expect(herald.stopIngest() == 0)
    }

    @Test func acknowledgedWritesSurviveKill9() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        let app = HeraldProcesses.appCode
        for index in 0..<50 {
            try herald.ok("registerDevice", ["application": .string(app), "hwid": .string("d\(index)"), "device_type": 3,
                                             "push_token": .string("token-\(index)"), "tags": ["N": .int(Int64(index))]])
        }
        try herald.ok("postEvent", ["application": .string(app), "hwid": "d1", "event": "Purchase", "attributes": ["sum": 3]])
        herald.stopIngest(signal: SIGKILL)
        try herald.startIngest()
        for index in [0, 17, 49] {
            #expect(try herald.ok("getTags", ["application": .string(app), "hwid": .string("d\(index)")]) == ["result": ["N": .int(Int64(index))]])
        }
        herald.stopIngest()
        let store = try herald.stores().devices
        #expect(try store.reports(app: app, limit: 10).map(\.name) == ["Purchase"])
    }

    @Test(arguments: TestDatabase.tested) func sigtermDuringAWriteBurstExitsCleanlyAndKeepsWhatWasAcknowledged(_ database: TestDatabase) throws {
        let herald = try HeraldProcesses(database: database)
        try herald.startIngest()
        let app = HeraldProcesses.appCode
        let acknowledged = Mutex<[String]>([])
        let port = herald.httpPort
        // Real threads (a global dispatch queue would run only a couple at once on 2 cores), each
        // keeping a request in flight, so that some are suspended in ingest when SIGTERM arrives.
        let finished = DispatchSemaphore(value: 0)
        let threads = 48
        for thread in 0..<threads {
            Thread {
                defer { finished.signal() }
                let client = HTTPClient(port: port)
                for index in 0..<300 {
                    let hwid = "burst-\(thread)-\(index)"
                    let body = JSON.object(["request": ["application": .string(app), "hwid": .string(hwid), "device_type": 3,
                                                        "push_token": .string("t-\(hwid)")]]).encoded()
                    guard let response = try? client.request("POST", "/json/1.3/registerDevice", body: body, timeoutSeconds: 5)
                    else { return }
                    if response.status == 200, response.text.contains("\"status_code\":200") { acknowledged.withLock { $0.append(hwid) } }
                }
            }.start()
        }
        usleep(300_000)
        #expect(herald.stopIngest() == 0)
        for _ in 0..<threads { finished.wait() }
        #expect(!herald.log().contains("Fatal"))
        let store = try herald.stores().devices
        let saved = acknowledged.withLock { $0 }
        #expect(!saved.isEmpty)
        for hwid in saved { #expect(try store.device(app: app, hwid: hwid) != nil, "acknowledged \(hwid) is missing") }
    }

    @Test func tenProcessesStartingTogetherOnANewDatabaseAllComeUp() throws {
        let herald = try HeraldProcesses()
        // Ingest and nine workers at the same instant, on a database file that does not exist yet.
        let ingest = try HeraldProcesses.launch("herald-ingest", arguments: ["--config", herald.configPath], log: herald.logPath)
        defer {
            kill(ingest.processIdentifier, SIGKILL)
            ingest.waitUntilExit()
        }
        for _ in 0..<9 { try herald.startWorker() }
        let deadline = Date().addingTimeInterval(10)
        while (try? herald.client.request("GET", "/healthz", timeoutSeconds: 1).status) != 200 && Date() < deadline && ingest.isRunning {
            usleep(50_000)
        }
        try herald.waitForWorkers(9, timeout: 15)
        #expect(ingest.isRunning && herald.workers.allSatisfy(\.isRunning))
        let errors = ([herald.log()] + (0..<9).map { (try? String(contentsOfFile: herald.workerLogPath($0), encoding: .utf8)) ?? "" })
            .joined().split(separator: "\n").filter { $0.contains(" ERROR ") }
        #expect(errors.isEmpty, "\(errors)")
    }

    /// `--backup` copies a SQLite file (VACUUM INTO); on PostgreSQL it refuses and names pg_dump.
    @Test func aBackupTakenUnderWriteLoadHoldsEverythingAcknowledgedBeforeIt() throws {
        let herald = try HeraldProcesses(database: .sqlite)
        try herald.startIngest()
        let app = HeraldProcesses.appCode
        let acknowledged = Mutex<[String]>([])
        let stop = Atomic<Bool>(false)
        let port = herald.httpPort
        let writer = Thread {
            let client = DeviceAPIClient(port: port)
            var index = 0
            while !stop.load(ordering: .relaxed) && index < 100_000 {
                let hwid = "b-\(index)"
                if (try? client.ok("registerDevice", SDKRequests.registerDevice(app: app, SDKDevice(hwid, platform: 1)))) != nil {
                    acknowledged.withLock { $0.append(hwid) }
                }
                index += 1
            }
        }
        writer.start()
        defer { stop.store(true, ordering: .relaxed) }
        while acknowledged.withLock({ $0.count }) < 500 { usleep(10_000) }
        let before = Set(acknowledged.withLock { $0 })
        let copy = herald.folder + "/backup.sqlite"
        let process = try HeraldProcesses.launch("herald-ingest", arguments: ["--config", herald.configPath, "--backup", copy],
                                                 log: herald.folder + "/backup.log")
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        let output = (try? String(contentsOfFile: herald.folder + "/backup.log", encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 0 && output.contains("backup of"), "\(output)")
        let during = acknowledged.withLock { $0.count }
        stop.store(true, ordering: .relaxed)

        let connection = try SQLiteConnection(path: copy, busyTimeoutMilliseconds: 1000, readOnly: true)
        defer { connection.close() }
        #expect(try connection.prepare("PRAGMA integrity_check").first { $0.text(0) } == "ok")
        let stored = Set(try connection.prepare("SELECT hwid FROM devices").rows([]) { $0.text(0) })
        #expect(before.isSubset(of: stored), "\(before.subtracting(stored).count) devices acknowledged before the backup are missing")
        #expect(during > before.count, "writes went on while the backup ran")
        // A backup never overwrites a file.
        let again = try HeraldProcesses.launch("herald-ingest", arguments: ["--config", herald.configPath, "--backup", copy],
                                               log: herald.folder + "/backup-again.log")
        again.waitUntilExit()
        #expect(again.terminationStatus == 1)
    }

    /// What the PostgreSQL server says besides answers (here a trigger's `RAISE WARNING`) is logged
    /// as Herald's own line, never printed raw by libpq.
    @Test func aPostgreSQLWarningIsLoggedInHeraldsFormat() throws {
        let herald = try HeraldProcesses(database: .postgres)
        try herald.startIngest()
        try PostgresConnection(PostgresConnectionSettings(url: try #require(herald.databaseURL))).execute("""
            CREATE FUNCTION warn_on_device() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE WARNING 'a device was written'; RETURN NEW; END $$;
            CREATE TRIGGER warn_on_device AFTER INSERT ON devices FOR EACH ROW EXECUTE FUNCTION warn_on_device()
            """)
        try herald.register(SDKDevice("noticed", platform: 1))
        let deadline = Date().addingTimeInterval(10)
        var lines: [Substring] = []
        repeat {
            lines = herald.log().split(separator: "\n").filter { $0.contains("a device was written") }
            if lines.isEmpty { usleep(50_000) }
        } while lines.isEmpty && Date() < deadline
        #expect(lines.count == 1 && lines.allSatisfy { $0.contains(" WARNING herald-ingest PostgreSQL server notice ")
            && $0.contains("postgres.severity=WARNING") }, "\(herald.log().suffix(2000))")
        #expect(!herald.log().contains("WARNING:  "), "\(herald.log().suffix(2000))")
    }

    @Test func aBackupOfAPostgreSQLDatabaseIsRefusedNamingPgDumpBeforeConnecting() throws {
        let herald = try HeraldProcesses(database: .postgres)
        let copy = herald.folder + "/backup.sqlite"
        let process = try HeraldProcesses.launch("herald-ingest", arguments: ["--config", herald.configPath, "--backup", copy],
                                                 log: herald.folder + "/backup.log")
        process.waitUntilExit()
        let output = (try? String(contentsOfFile: herald.folder + "/backup.log", encoding: .utf8)) ?? ""
        #expect(process.terminationStatus == 2 && output.contains("pg_dump") && output.contains("database.url"), "\(output)")
        #expect(!FileManager.default.fileExists(atPath: copy))
        // Refused before connecting: the empty schema was not migrated.
        #expect(try herald.count("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()") == 0)
    }
}
