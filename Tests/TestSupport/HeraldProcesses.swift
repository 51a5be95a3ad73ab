import Foundation
import Core
import SDKClient
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The database the integration tests give Herald: a SQLite file, or a fresh schema of the shared
/// PostgreSQL test server. `HERALD_TEST_DATABASE=postgres` runs the integration tests on PostgreSQL
/// (`ops/test` runs them once per backend), but for those whose traits (`TestDatabase+Traits.swift`)
/// keep them to the SQLite pass.
package enum TestDatabase: String, CaseIterable, Sendable {
    case sqlite, postgres

    /// `HERALD_TEST_DATABASE`, SQLite when unset.
    package static var configured: TestDatabase {
        ProcessInfo.processInfo.environment["HERALD_TEST_DATABASE"].flatMap(TestDatabase.init(rawValue:)) ?? .sqlite
    }

    /// The backends a test that names its backend in its arguments runs on: the configured one when
    /// `HERALD_TEST_DATABASE` is set (each of `ops/test`'s passes covers one), else both.
    package static var tested: [TestDatabase] {
        ProcessInfo.processInfo.environment["HERALD_TEST_DATABASE"] == nil ? allCases : [configured]
    }
}

/// Runs the real `herald-ingest` (and workers) on free loopback ports with a temporary SQLite file
/// or PostgreSQL schema. Everything it starts is stopped when the value is released.
package final class HeraldProcesses {
    package let folder: String
    package let configPath: String
    package let httpPort: UInt16
    /// `database.url` when Herald runs on PostgreSQL; nil on SQLite (`databasePath`).
    package let databaseURL: String?
    package private(set) var ingest: Process?
    package private(set) var workers: [Process] = []

    package static let appCode = "ABCDE-12345"
    package static let otherAppCode = "FGHIJ-67890"

    /// The folder with the built executables: `HERALD_BIN_DIR`, or this package's `.build/debug`.
    package static var binaryDirectory: String {
        if let dir = ProcessInfo.processInfo.environment["HERALD_BIN_DIR"] { return dir }
        // Tests/TestSupport/HeraldProcesses.swift → the package root.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug").path
    }

    /// - Parameter throttle: `throttle.per_device` (`count` pushes per `windowSeconds`); nil leaves
    ///   the product's default (10 per 3600 s).
    /// - Parameter shopDelivery: keys (such as `apns` and `fcm` blocks) that replace the Shop app's
    ///   `sink`, so that it delivers for real; nil keeps the sink.
    /// - Parameter database: where Herald keeps its data (`HERALD_TEST_DATABASE` by default).
    /// - Parameter postgresURL: a PostgreSQL database of the test's own (it wins over `database`).
    package init(maxBodyBytes: Int = 65536, throttle: (count: Int, windowSeconds: Int)? = nil, shopDelivery: [String: JSON]? = nil,
                 database: TestDatabase = .configured, postgresURL: String? = nil) throws {
        folder = NSTemporaryDirectory() + "herald-it-" + UUID().uuidString
        // `var` holds the sinks (and the SQLite file, whose folder ingest would create).
        try FileManager.default.createDirectory(atPath: folder + "/var", withIntermediateDirectories: true)
        httpPort = try Self.freePort()
        databaseURL = try postgresURL ?? (database == .postgres ? PostgresServer.shared().makeSchema() : nil)
        var config: JSON = [
            "log_level": "DEBUG",
            // `public_url` is where rich media pages are downloaded from: ingest itself.
            "http": ["listen": .string("127.0.0.1:\(httpPort)"), "max_body_bytes": .int(Int64(maxBodyBytes)), "threads": 2,
                     "public_url": .string("http://127.0.0.1:\(httpPort)")],
            "database": databaseURL.map { ["url": .string($0), "pool_size": 4] } ?? ["path": "var/herald.sqlite"],
            // Unix-domain queue endpoints in the test's own folder: no port can collide with another test.
            "queue": ["jobs": .string("ipc://\(folder)/jobs"), "results": .string("ipc://\(folder)/results")],
            "apps": [
                ["code": .string(Self.appCode), "name": "Shop", "api_token": "shop-secret", "sink": "var/sink.jsonl"],
                ["code": .string(Self.otherAppCode), "name": "News", "api_token": "news-secret", "sink": "var/news.jsonl"],
            ],
        ]
        if let shopDelivery, case .object(var members) = config, case .array(var apps)? = members["apps"],
            case .object(var shop) = apps[0] {
            shop["sink"] = nil
            shop.merge(shopDelivery) { _, new in new }
            apps[0] = .object(shop)
            members["apps"] = .array(apps)
            config = .object(members)
        }
        if let throttle, case .object(var members) = config {
            members["throttle"] = ["per_device": ["count": .int(Int64(throttle.count)), "window_seconds": .int(Int64(throttle.windowSeconds))]]
            config = .object(members)
        }
        configPath = folder + "/herald.json"
        try Data(config.encoded()).write(to: URL(fileURLWithPath: configPath))
    }

    deinit {
        for process in workers + [ingest].compactMap({ $0 }) where process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    package var client: HTTPClient { HTTPClient(port: httpPort) }
    package var databasePath: String { folder + "/var/herald.sqlite" }
    package var logPath: String { folder + "/ingest.log" }
    /// Where `startWorker` sends the standard output and error of worker `index`.
    package func workerLogPath(_ index: Int) -> String { folder + "/worker\(index).log" }

    /// Writes a copy of the configuration, changed by `edit`, to `name` in the test's folder; returns its path.
    package func writeConfig(_ name: String, _ edit: (inout [String: JSON]) -> Void) throws -> String {
        guard case .object(var members) = try JSON.parse(Data(contentsOf: URL(fileURLWithPath: configPath))) else {
            throw HTTPClient.Failure(description: "\(configPath) is not an object")
        }
        edit(&members)
        let path = folder + "/" + name
        try Data(JSON.object(members).encoded()).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// Starts `executable` from the build folder; `wrapper` (such as `ip netns exec NAME`) runs it.
    package static func launch(_ executable: String, arguments: [String], log: String, wrapper: [String] = []) throws -> Process {
        let process = Process()
        let binary = binaryDirectory + "/" + executable
        if let tool = wrapper.first {
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = Array(wrapper.dropFirst()) + [binary] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: binary)
            process.arguments = arguments
        }
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        handle.seekToEndOfFile()
        process.standardError = handle
        process.standardOutput = handle
        try process.run()
        return process
    }

    /// Runs `executable` from the build folder to completion (at most `limit` seconds, then SIGKILL and
    /// a thrown failure); returns its exit status and its standard output and error together.
    package static func runToCompletion(_ executable: String, arguments: [String], limit: Double) throws -> (status: Int32, output: String) {
        try Command.run([binaryDirectory + "/" + executable] + arguments, timeout: limit)
    }

    /// Starts ingest (with the test's configuration, or `config`) and waits (at most 30 s: the
    /// suites start many at once on two cores) until `/healthz` answers 200.
    package func startIngest(config: String? = nil) throws {
        ingest = try Self.launch("herald-ingest", arguments: ["--config", config ?? configPath], log: logPath)
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let response = try? client.request("GET", "/healthz", timeoutSeconds: 1), response.status == 200 { return }
            guard ingest?.isRunning == true else { break }
            usleep(50_000)
        }
        let state = ingest?.isRunning == true ? "still running" : "exited with \(ingest?.terminationStatus ?? -1)"
        throw HTTPClient.Failure(description: "ingest did not become healthy (\(state)): \(log())")
    }

    /// Starts a worker with the test's configuration or `config` and `arguments`, run by `wrapper` if given.
    package func startWorker(config: String? = nil, arguments: [String] = [], wrapper: [String] = []) throws {
        workers.append(try Self.launch("herald-worker", arguments: ["--config", config ?? configPath] + arguments, log: workerLogPath(workers.count),
                                       wrapper: wrapper))
    }

    /// SIGTERM (graceful) or SIGKILL, then wait for the exit. Returns the exit status.
    @discardableResult
    package func stopIngest(signal: Int32 = SIGTERM) -> Int32 {
        guard let ingest else { return -1 }
        kill(ingest.processIdentifier, signal)
        ingest.waitUntilExit()
        self.ingest = nil
        return ingest.terminationStatus
    }

    package func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Ports handed out in this test process: the kernel may offer a just-closed port again while
    /// another test, running in parallel, is about to bind it.
    package static let handedOut = Mutex<Set<UInt16>>([])

    package static func freePort() throws -> UInt16 {
        for _ in 0..<50 {
            let port = try ephemeralPort()
            let fresh = handedOut.withLock { $0.insert(port).inserted }
            if fresh { return port }
        }
        throw HTTPClient.Failure(description: "no free port")
    }

    package static func ephemeralPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(fd, pointer, length) == 0 else { return -1 }
                return getsockname(fd, pointer, &length)
            }
        }
        guard bound == 0 else { throw HTTPClient.Failure(description: "no free port") }
        return UInt16(bigEndian: address.sin_port)
    }

    // MARK: - Calls

    /// `POST /json/1.3/<method>` with `{"request": request}` on a new connection; returns the HTTP
    /// status and the parsed body.
    package func call(_ method: String, _ request: JSON) throws -> (status: Int, body: JSON) {
        try DeviceAPIClient(port: httpPort).call(method, request)
    }

    /// A Device API call that must succeed; returns `response`.
    @discardableResult
    package func ok(_ method: String, _ request: JSON) throws -> JSON {
        try DeviceAPIClient(port: httpPort).ok(method, request)
    }
}
