import Foundation
import Core
import SDKClient
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Paths inside this repository.
enum Repository {
    static var root: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().path
    }
    static var mocks: String { root + "/ops/mocks" }
}

/// Runs a short helper program (make-test-pki, openssl) and waits at most `timeout` seconds.
/// Returns its combined output; throws when it fails or overruns.
@discardableResult
func runTool(_ executable: String, _ arguments: [String], timeout: Double = 20) throws -> String {
    let (status, output) = try Command.run([executable] + arguments, timeout: timeout)
    guard status == 0 else {
        throw HTTPClient.Failure(description: "\(executable) \(arguments.joined(separator: " ")) exited \(status): \(output)")
    }
    return output
}

/// The throw-away keys and certificates of this test run, made once by `ops/mocks/make-test-pki` in a
/// temporary folder (removed when the test process exits). Each test copies them and points its copy of
/// the service account at its own FCM mock.
enum TestPKI {
    static let teamID = "TEAM123456"
    static let keyID = "KEYID123456"
    static let topic = "com.example.shop"

    private static let made: Result<String, HTTPClient.Failure> = {
        let folder = NSTemporaryDirectory() + "herald-pki-" + UUID().uuidString
        do {
            try runTool("/bin/bash", [Repository.mocks + "/make-test-pki", folder])
        } catch {
            return .failure(error as? HTTPClient.Failure ?? HTTPClient.Failure(description: "\(error)"))
        }
        atexit {
            if case .success(let folder) = TestPKI.made { try? FileManager.default.removeItem(atPath: folder) }
        }
        return .success(folder)
    }()

    /// The suite's PKI folder (made on first use).
    static func shared() throws -> String { try made.get() }

    /// Copies the suite's PKI into `folder` and rewrites the copy's service account `token_uri`
    /// with make-test-pki (which keeps the existing keys).
    static func copy(into folder: String, tokenURI: String) throws {
        let source = try shared()
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: source) {
            try FileManager.default.copyItem(atPath: source + "/" + name, toPath: folder + "/" + name)
        }
        try runTool("/bin/bash", [Repository.mocks + "/make-test-pki", folder, tokenURI])
    }
}

/// One mock server process (`ops/mocks/apns_mock.py`, `fcm_mock.py`, `huawei_mock.py` or `webpush_mock.py`) on
/// free loopback ports.
/// Its stderr goes to `<name>.log` and every request to `<name>.jsonl` in `folder`. Stopped with
/// SIGTERM (then SIGKILL) by `stop()` or when released.
final class MockServer {
    enum Kind: String {
        case apns = "apns_mock.py"
        case fcm = "fcm_mock.py"
        case huawei = "huawei_mock.py"
        case webpush = "webpush_mock.py"
    }

    let kind: Kind
    let name: String
    let folder: String
    let arguments: [String]
    let process: Process
    let port: UInt16
    let adminPort: UInt16
    let recordPath: String
    let logPath: String
    private let stdout: Pipe

    var url: String { "https://127.0.0.1:\(port)" }

    /// Runs the mock script given as the first argument with an empty signal mask. A child of the
    /// test process inherits the mask of the (libdispatch) thread that spawned it, which blocks
    /// SIGTERM, and the mocks only stop cleanly on SIGTERM/SIGINT.
    static let launcher = """
        import os, runpy, signal, sys
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        sys.argv = sys.argv[1:]
        sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
        runpy.run_path(sys.argv[0], run_name="__main__")
        """

    /// Starts the mock on `port` (0: a free one). Its record file is appended to, so a mock
    /// restarted under the same name keeps one record of every request.
    init(_ kind: Kind, name: String, folder: String, arguments: [String], port requested: UInt16 = 0) throws {
        self.kind = kind
        self.name = name
        self.folder = folder
        self.arguments = arguments
        recordPath = folder + "/\(name).jsonl"
        logPath = folder + "/\(name).log"
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        defer { try? log.close() }
        try log.seekToEnd()
        stdout = Pipe()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", Self.launcher, Repository.mocks + "/" + kind.rawValue, "--port", String(requested),
                             "--admin-port", "0", "--record", recordPath] + arguments
        process.standardOutput = stdout
        process.standardError = log
        try process.run()

        // Read "LISTENING <port>" and "ADMIN <port>" with a bounded wait: 30 s, since Python and
        // its TLS and JWT libraries start slowly while the first pass runs many processes on two
        // cores (a clean-clone run saw 10 s run out).
        let fd = stdout.fileHandleForReading.fileDescriptor
        let deadline = Date().addingTimeInterval(30)
        var text = ""
        var ports: [String: UInt16] = [:]
        while ports.count < 2 {
            let left = deadline.timeIntervalSinceNow
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard left > 0, poll(&poller, 1, Int32(left * 1000)) > 0 else { break }
            var buffer = [UInt8](repeating: 0, count: 256)
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { break }
            text += String(decoding: buffer[0..<count], as: UTF8.self)
            for line in text.split(separator: "\n") {
                let parts = line.split(separator: " ")
                if parts.count == 2, let value = UInt16(parts[1]) { ports[String(parts[0])] = value }
            }
        }
        guard let port = ports["LISTENING"], let admin = ports["ADMIN"] else {
            Self.terminate(process)
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            throw HTTPClient.Failure(description: "\(kind.rawValue) did not report its ports within 30 s; stdout \(text.debugDescription), stderr \(log)")
        }
        self.port = port
        self.adminPort = admin
    }

    deinit { stop() }

    func stop() { Self.terminate(process) }

    /// Kills the mock with SIGKILL: its connections die without a goodbye.
    func kill() {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// A new mock of the same kind, name and arguments on the same port (after `kill()`).
    func restarted() throws -> MockServer {
        try MockServer(kind, name: name, folder: folder, arguments: arguments, port: port)
    }

    private static func terminate(_ process: Process) {
        guard process.isRunning else { return }
        Glibc.kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(3)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// An APNs mock that trusts the PKI's key (`KEYID123456` of team `TEAM123456`) for `TestPKI.topic`.
    static func apns(pki: String, folder: String, name: String = "apns", extra: [String] = []) throws -> MockServer {
        try MockServer(.apns, name: name, folder: folder, arguments: [
            "--cert", pki + "/server.pem", "--key", pki + "/server.key", "--team", TestPKI.teamID,
            "--key-id", TestPKI.keyID, "--public-key", pki + "/apns-\(TestPKI.keyID).pub.pem", "--topic", TestPKI.topic,
        ] + extra)
    }

    /// An FCM mock for the PKI's service account (it accepts `https://127.0.0.1:<port>/token` as audience).
    static func fcm(pki: String, folder: String, name: String = "fcm", extra: [String] = []) throws -> MockServer {
        try MockServer(.fcm, name: name, folder: folder, arguments: [
            "--cert", pki + "/server.pem", "--key", pki + "/server.key", "--service-account", pki + "/fcm-service-account.json",
        ] + extra)
    }

    /// A Huawei Push Kit mock for app `appID` whose client secret is in `secretFile`.
    static func huawei(pki: String, folder: String, appID: String, secretFile: String, extra: [String] = []) throws -> MockServer {
        try MockServer(.huawei, name: "huawei", folder: folder, arguments: [
            "--cert", pki + "/server.pem", "--key", pki + "/server.key", "--app-id", appID, "--client-secret-file", secretFile,
        ] + extra)
    }

    /// A Web Push service mock; `extra` may bind its subscriptions to one VAPID key
    /// (`--application-server-key`).
    static func webpush(pki: String, folder: String, name: String = "webpush", extra: [String] = []) throws -> MockServer {
        try MockServer(.webpush, name: name, folder: folder, arguments: ["--cert", pki + "/server.pem", "--key", pki + "/server.key"] + extra)
    }

    // MARK: Admin and record

    /// `GET /stats` on the admin port.
    func stats() throws -> JSON {
        let response = try HTTPClient(port: adminPort).request("GET", "/stats", timeoutSeconds: 5)
        guard response.status == 200 else { throw HTTPClient.Failure(description: "\(name) /stats: HTTP \(response.status)") }
        return try JSON.parse(response.body)
    }

    /// An admin call (`POST /outage?status=503&seconds=1`, `POST /drop`); fails unless it answers 200.
    @discardableResult
    func admin(_ method: String, _ path: String) throws -> JSON {
        let response = try HTTPClient(port: adminPort).request(method, path, timeoutSeconds: 5)
        guard response.status == 200 else { throw HTTPClient.Failure(description: "\(name) \(method) \(path): HTTP \(response.status)") }
        return try JSON.parse(response.body)
    }

    /// How many times each token was accepted (answered 200), from the record file.
    func acceptedPerToken() throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for line in try records() where line["status"] == 200 {
            if let token = line["token"]?.stringValue { counts[token, default: 0] += 1 }
        }
        return counts
    }

    /// Every complete line of the record file, parsed, in the order the mock answered.
    func records() throws -> [JSON] { try jsonLines(atPath: recordPath) }

    /// The record lines of one device token.
    func records(token: String) throws -> [JSON] { try records().filter { $0["token"] == .string(token) } }

    func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}

/// Herald (ingest + workers) whose Shop app delivers through a mock APNs (and optionally a second
/// one as the sandbox host) and a mock FCM, with a PKI copy of its own. Everything stops when released.
final class DeliveryRig {
    let folder: String
    let pki: String
    private(set) var apns: MockServer
    let sandbox: MockServer?
    let fcm: MockServer
    let herald: HeraldProcesses

    /// - Parameters:
    ///   - workers: worker processes to start.
    ///   - sandbox: start a second APNs mock and configure it as `sandbox_url`.
    ///   - apnsKeyPath: the `.p8` key the worker signs with (default: the one the mock trusts).
    ///   - throttle: `throttle.per_device` (`count` pushes per `windowSeconds`); nil leaves the default.
    ///   - database: where Herald keeps its data.
    init(workers: Int = 1, sandbox withSandbox: Bool = false, apnsKeyPath: String? = nil, apnsArguments: [String] = [],
         fcmArguments: [String] = [], throttle: (count: Int, windowSeconds: Int)? = nil, database: TestDatabase = .configured) throws {
        folder = NSTemporaryDirectory() + "herald-mocks-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let shared = try TestPKI.shared()
        apns = try MockServer.apns(pki: shared, folder: folder, extra: apnsArguments)
        sandbox = try withSandbox ? MockServer.apns(pki: shared, folder: folder, name: "apns-sandbox", extra: apnsArguments) : nil
        fcm = try MockServer.fcm(pki: shared, folder: folder, extra: fcmArguments)
        pki = folder + "/pki"
        try TestPKI.copy(into: pki, tokenURI: "\(fcm.url)/token")
        herald = try HeraldProcesses(throttle: throttle, shopDelivery: [
            "apns": [
                "team_id": .string(TestPKI.teamID), "key_id": .string(TestPKI.keyID),
                "key_path": .string(apnsKeyPath ?? pki + "/apns-\(TestPKI.keyID).p8"), "topic": .string(TestPKI.topic),
                "production_url": .string(apns.url), "sandbox_url": .string((sandbox ?? apns).url), "ca_file": .string(pki + "/ca.pem"),
            ],
            "fcm": [
                "service_account_path": .string(pki + "/fcm-service-account.json"), "endpoint": .string(fcm.url),
                "ca_file": .string(pki + "/ca.pem"),
            ],
        ], database: database)
        try herald.startIngest()
        for _ in 0..<workers { try herald.startWorker() }
        try herald.waitForWorkers(workers)
    }

    deinit {
        for mock in [apns, fcm] + [sandbox].compactMap({ $0 }) { mock.stop() }
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Kills the APNs mock (SIGKILL) and, after `downFor` seconds, starts it again on the same port.
    func restartAPNs(downFor seconds: Double) throws {
        apns.kill()
        Thread.sleep(forTimeInterval: seconds)
        apns = try apns.restarted()
    }

    /// Registers a Shop device (platform 1 iOS, 3 Android), optionally with a `gateway`.
    func register(_ hwid: String, platform: Int, token: String, gateway: String? = nil) throws {
        var request: [String: JSON] = [
            "application": .string(HeraldProcesses.appCode), "hwid": .string(hwid), "device_type": .int(Int64(platform)),
            "push_token": .string(token),
        ]
        if let gateway { request["gateway"] = .string(gateway) }
        try herald.ok("registerDevice", .object(request))
    }

    /// Sends one notification to the Shop app and waits (bounded) until the message is done.
    func sendAndWait(_ notification: JSON, timeout: Double = 25) throws -> (code: String, funnel: JSON) {
        let code = try herald.send(notification)
        return (code, try herald.waitForMessage(code, timeout: timeout))
    }

    /// The `deliveries` rows of one message, read-only from the database: hwid, status, reason.
    func deliveries(_ code: String) throws -> [(hwid: String, status: String, reason: String?)] { try herald.deliveries(code) }

    /// The worker's log (standard output and error).
    func workerLog(_ index: Int = 0) -> String {
        (try? String(contentsOfFile: herald.workerLogPath(index), encoding: .utf8)) ?? ""
    }
}

/// A deterministic device token: `prefix` followed by hex digits, 64 characters in all. Normal tokens
/// (empty prefix) start with a digit, so that they never hit the mocks' `bad…`/`dead…` scripts.
func deviceToken(_ prefix: String, seed: String) -> String {
    var state: UInt64 = 0xCBF2_9CE4_8422_2325
    for byte in seed.utf8 { state = (state ^ UInt64(byte)) &* 0x100_0000_01B3 }
    var random = SplitMix64(seed: state)
    var token = prefix.isEmpty ? String(Int.random(in: 0...9, using: &random)) : prefix
    while token.count < 64 { token += String(Int.random(in: 0..<16, using: &random), radix: 16) }
    return token
}
