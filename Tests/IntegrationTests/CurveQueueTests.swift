import Foundation
import Core
import Postgres
import Queue
import SDKClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Workers reaching ingest over TCP with ZeroMQ CURVE, as on other hosts: keys made by the binaries'
/// `--generate-curve-key`, a worker whose key is not listed getting nothing, SIGHUP re-reading the
/// list, a worker in its own network namespace, and the start-up refusals.
@Suite(.serialized) struct CurveQueueTests {
    /// Runs a Herald binary to completion (bounded) and returns its exit status and output.
    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let log = NSTemporaryDirectory() + "herald-run-" + UUID().uuidString + ".log"
        defer { try? FileManager.default.removeItem(atPath: log) }
        let process = try HeraldProcesses.launch(executable, arguments: arguments, log: log)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        return (process.terminationStatus, (try? String(contentsOfFile: log, encoding: .utf8)) ?? "")
    }

    /// A key pair made by `herald-worker --generate-curve-key`: the secret key's file and the public key.
    static func keyPair(_ herald: HeraldProcesses, _ name: String) throws -> (file: String, publicKey: String) {
        let file = herald.folder + "/\(name).key"
        let (status, output) = try run("herald-worker", ["--generate-curve-key", file])
        let publicKey = output.trimmingCharacters(in: .whitespacesAndNewlines)
        guard status == 0, CurveSettings.isKey(publicKey) else {
            throw HTTPClient.Failure(description: "--generate-curve-key exited \(status): \(output)")
        }
        return (file, publicKey)
    }

    /// Queue settings on TCP `host` with CURVE.
    static func queue(host: String, jobs: UInt16, results: UInt16, curve: [String: JSON]) -> JSON {
        ["jobs": .string("tcp://\(host):\(jobs)"), "results": .string("tcp://\(host):\(results)"), "curve": .object(curve)]
    }

    /// Knocks on `endpoint` (ingest's results endpoint, a CURVE server with `serverKey`) with
    /// `count` new key pairs, 100 PUSH sockets at a time as a worker's, each open until ingest
    /// refused its handshake (at most 10 s a round).
    static func knock(_ endpoint: String, serverKey: String, count: Int) throws {
        let context = QueueContext()
        defer { context.terminate() }
        for _ in 0..<count / 100 {
            var sockets: [QueueSocket] = [], monitors: [QueueMonitor] = []
            defer {
                sockets.forEach { $0.close() }
                monitors.forEach { $0.close() }
            }
            for _ in 0..<100 {
                let socket = try QueueSocket(context, kind: .push, lingerMilliseconds: 0)
                sockets.append(socket)
                monitors.append(try QueueMonitor(context, watching: socket))
                try socket.makeCurveClient(serverKey: serverKey, secretKey: try CurveKeys.pair().secretKey)
                try socket.connect(endpoint)
            }
            var refused = Set<Int>()
            let deadline = Date().addingTimeInterval(10)
            while refused.count < monitors.count && Date() < deadline {
                for (index, monitor) in monitors.enumerated() where try monitor.events().contains(.refused) { refused.insert(index) }
                usleep(20_000)
            }
            guard refused.count == monitors.count else {
                throw HTTPClient.Failure(description: "\(monitors.count - refused.count) of 100 handshakes not refused within 10 s")
            }
        }
    }

    /// Whether Herald has created its database: the SQLite file, or tables in the test's PostgreSQL schema.
    static func databaseCreated(_ herald: HeraldProcesses) throws -> Bool {
        guard let url = herald.databaseURL else { return FileManager.default.fileExists(atPath: herald.databasePath) }
        let connection = try PostgresConnection(PostgresConnectionSettings(url: url))
        defer { connection.close() }
        return try connection.first("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()") { $0.int(0) } != 0
    }

    static func connectedWorkers(_ herald: HeraldProcesses) throws -> String {
        try herald.client.request("GET", "/metrics").text.split(separator: "\n").first { $0.hasPrefix("herald_workers_connected ") }
            .map(String.init) ?? ""
    }

    /// Ingest on this side of `hosts`' link and a worker in its namespace, over CURVE with the
    /// worker's key listed: the two configurations' paths. `editWorker` adds to the worker's.
    static func acrossTheLink(_ herald: HeraldProcesses, _ hosts: TwoHosts, jobs: UInt16, results: UInt16,
                              editWorker: (inout [String: JSON]) -> Void = { _ in }) throws -> (ingest: String, worker: String) {
        let ingestKey = try keyPair(herald, "ingest")
        let worker = try keyPair(herald, "worker")
        let authorized = herald.folder + "/authorized_keys"
        try Data("\(worker.publicKey)\n".utf8).write(to: URL(fileURLWithPath: authorized))
        let ingestConfig = try herald.writeConfig("ingest.json") {
            $0["queue"] = queue(host: hosts.hostAddress, jobs: jobs, results: results,
                                curve: ["secret_key_file": .string(ingestKey.file), "authorized_keys_file": .string(authorized)])
        }
        let workerConfig = try herald.writeConfig("worker.json") {
            $0["queue"] = queue(host: hosts.hostAddress, jobs: jobs, results: results,
                                curve: ["secret_key_file": .string(worker.file), "server_public_key": .string(ingestKey.publicKey)])
            editWorker(&$0)
        }
        return (ingestConfig, workerConfig)
    }

    @Test func onlyWorkersWithAListedKeyGetWorkAndSIGHUPRereadsTheList() throws {
        let herald = try HeraldProcesses()
        let ingestKey = try Self.keyPair(herald, "ingest")
        let listed = try Self.keyPair(herald, "worker-a")
        let stranger = try Self.keyPair(herald, "worker-b")
        let mode = try FileManager.default.attributesOfItem(atPath: listed.file)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let authorized = herald.folder + "/authorized_keys"
        try Data("# herald workers\n\(listed.publicKey) host-a\n".utf8).write(to: URL(fileURLWithPath: authorized))
        let (jobs, results) = (try HeraldProcesses.freePort(), try HeraldProcesses.freePort())
        let ingestConfig = try herald.writeConfig("ingest.json") {
            $0["queue"] = Self.queue(host: "127.0.0.1", jobs: jobs, results: results,
                                     curve: ["secret_key_file": .string(ingestKey.file), "authorized_keys_file": .string(authorized)])
        }
        func workerConfig(_ key: (file: String, publicKey: String), _ name: String) throws -> String {
            try herald.writeConfig(name) {
                $0["queue"] = Self.queue(host: "127.0.0.1", jobs: jobs, results: results,
                                         curve: ["secret_key_file": .string(key.file), "server_public_key": .string(ingestKey.publicKey)])
            }
        }
        try herald.startIngest(config: ingestConfig)
        try herald.register(SDKDevice("c-1", platform: 1))
        try herald.register(SDKDevice("c-2", platform: 3))

        // The stranger connects, but its handshake is refused: no heartbeat, no shard.
        let knocking = Date()
        try herald.startWorker(config: try workerConfig(stranger, "worker-b.json"))
        let code = try herald.send(["send_date": "now", "content": "Hello"])
        Thread.sleep(forTimeInterval: 2)
        #expect(try Self.connectedWorkers(herald) == "herald_workers_connected 0")
        #expect(try herald.funnel(code).body["sent"] == 0)
        #expect(herald.log().contains("worker refused") && herald.log().contains(stranger.publicKey), "\(herald.log().suffix(1500))")
        // Anyone reaching the port can knock with as many new keys as they like: ingest still writes
        // one refusal line a minute (the first at once, then a summary).
        try Self.knock("tcp://127.0.0.1:\(results)", serverKey: ingestKey.publicKey, count: 300)
        let refusalLines = herald.log().split(separator: "\n").filter { $0.contains("worker refused") }
        #expect(refusalLines.count <= 1 + Int(Date().timeIntervalSince(knocking) / 60), "\(refusalLines.count) lines")

        // The listed worker gets the campaign.
        try herald.startWorker(config: try workerConfig(listed, "worker-a.json"))
        let funnel = try herald.waitForMessage(code, timeout: 20)
        #expect(funnel["sent"] == 2, "\(funnel.text)")

        // Listing the stranger and sending SIGHUP lets it in without a restart.
        try Data("# herald workers\n\(listed.publicKey) host-a\n\(stranger.publicKey) host-b\n".utf8)
            .write(to: URL(fileURLWithPath: authorized))
        kill(try #require(herald.ingest).processIdentifier, SIGHUP)
        try herald.waitForWorkers(2)
        #expect(herald.log().contains("authorized worker keys re-read"))

        // Refusals still held for the minute's summary are written when ingest stops: every one of
        // the 301 (the stranger's first and the 300 knocks) is in the log, at once or summed up.
        #expect(herald.stopIngest() == 0)
        let written = herald.log().split(separator: "\n").filter { $0.contains("worker refused") }.map { line in
            line.firstMatch(of: /worker refused: (\d+) more refused/).flatMap { Int($0.1) } ?? 1
        }
        #expect(written.reduce(0, +) >= 301, "\(written)")
    }

    @Test(.backends(.sqlite, reason: "the worker's namespace cannot reach the shared PostgreSQL test server on this host's loopback"))
    func aWorkerInAnotherNetworkNamespaceReachesIngestOverCurve() throws {
        #expect(getuid() == 0, "network namespaces need root; CI runs as root")
        let herald = try HeraldProcesses()
        let hosts = try TwoHosts()
        let hostAddress = hosts.hostAddress

        let (jobs, results) = (try HeraldProcesses.freePort(), try HeraldProcesses.freePort())
        // Beyond loopback without CURVE, ingest refuses to start and names the key.
        let insecure = try herald.writeConfig("insecure.json") {
            $0["queue"] = ["jobs": .string("tcp://\(hostAddress):\(jobs)"), "results": .string("tcp://\(hostAddress):\(results)")]
        }
        let refused = try Self.run("herald-ingest", ["--config", insecure])
        #expect(refused.status == 2 && refused.output.contains("queue.jobs"), "\(refused)")

        let configs = try Self.acrossTheLink(herald, hosts, jobs: jobs, results: results)
        try herald.startIngest(config: configs.ingest)
        try herald.startWorker(config: configs.worker, wrapper: hosts.wrapper)
        try herald.waitForWorkers(1)
        for index in 0..<20 { try herald.register(SDKDevice("ns-\(index)", platform: index % 2 == 0 ? 1 : 3)) }
        let funnel = try herald.waitForMessage(try herald.send(["send_date": "now", "content": "Across hosts"]), timeout: 20)
        #expect(funnel["sent"] == 20, "\(funnel.text)")
        #expect(herald.log().contains("worker joined"))
        // Ingest lists the worker at its address on the other side of the link.
        let listed = HeraldProcesses.workerInfo(try herald.client.request("GET", "/metrics").text)
        #expect(listed.map(\.address) == [hosts.namespaceAddress], "\(listed)")
    }

    /// A partition: the link to the worker's network namespace is set down, so packets vanish and
    /// no connection is closed. ZeroMQ heartbeats close the connections on both sides within
    /// seconds: the worker logs that it lost ingest, ingest that it lost the worker, and /metrics
    /// no longer lists it. Once the link is up, the worker connects again by itself and takes work.
    @Test(.backends(.sqlite, reason: "the worker's namespace cannot reach the shared PostgreSQL test server on this host's loopback"))
    func aWorkerInAnotherNetworkNamespaceBehindAPartitionIsNoticedOnBothSides() throws {
        #expect(getuid() == 0, "network namespaces need root; CI runs as root")
        let herald = try HeraldProcesses()
        let hosts = try TwoHosts()
        let configs = try Self.acrossTheLink(herald, hosts, jobs: try HeraldProcesses.freePort(), results: try HeraldProcesses.freePort())
        try herald.startIngest(config: configs.ingest)
        try herald.startWorker(config: configs.worker, wrapper: hosts.wrapper)
        try herald.waitForWorkers(1)
        let workerLog = { (try? String(contentsOfFile: herald.workerLogPath(0), encoding: .utf8)) ?? "" }
        func lines(_ log: String, _ text: String) -> Int { log.split(separator: "\n").filter { $0.contains(text) }.count }
        try waitUntil("the worker connects both links", timeout: 10) { lines(workerLog(), "connected to ingest") == 2 }

        try hosts.setLink(up: false)
        try waitUntil("the worker logs that it lost both links", timeout: 30) { lines(workerLog(), "lost the link to ingest") == 2 }
        try waitUntil("ingest logs that it lost the worker", timeout: 30) {
            herald.log().contains("worker lost: no heartbeat for 5 s") && herald.log().contains("worker.address=\(hosts.namespaceAddress)")
        }
        let metrics = try herald.client.request("GET", "/metrics").text
        #expect(metrics.contains("herald_workers_connected 0\n") && HeraldProcesses.workerInfo(metrics).isEmpty, "\(metrics)")
        // Still cut off, the worker keeps saying so.
        try waitUntil("the worker warns that ingest is unreachable", timeout: 30) { workerLog().contains("cannot reach ingest") }

        try hosts.setLink(up: true)
        try waitUntil("the worker connects again", timeout: 60) { lines(workerLog(), "connected to ingest") == 4 }
        try herald.waitForWorkers(1, timeout: 30)
        for index in 0..<10 { try herald.register(SDKDevice("cut-\(index)", platform: index % 2 == 0 ? 1 : 3)) }
        let funnel = try herald.waitForMessage(try herald.send(["send_date": "now", "content": "After the partition"]), timeout: 30)
        #expect(funnel["sent"] == 10, "\(funnel.text)")
    }

    /// Several hosts as deployed: ingest here, a worker in another network namespace, both on one
    /// PostgreSQL server that the worker reaches over the veth link (not loopback) and ingest over
    /// loopback, the queue over CURVE.
    @Test(.fixedBackend("starts a PostgreSQL server of its own that listens on the namespace link"))
    func aWorkerInAnotherNetworkNamespaceSharesThePostgreSQLDatabase() throws {
        #expect(getuid() == 0, "network namespaces need root; CI runs as root")
        let hosts = try TwoHosts()
        let server = try PostgresServer(alsoListeningOn: hosts.hostAddress, trusting: hosts.network)
        let herald = try HeraldProcesses(postgresURL: server.url)
        // The namespace is another host: PostgreSQL on this host's loopback is out of its reach.
        let probe = "import socket,sys\ntry:\n socket.create_connection(('127.0.0.1', \(server.port)), 2)\nexcept OSError:\n sys.exit(0)\nsys.exit(1)"
        #expect(throws: Never.self) { try hosts.inside(["python3", "-c", probe]) }

        let (ingestConfig, workerConfig) = try Self.acrossTheLink(herald, hosts, jobs: try HeraldProcesses.freePort(),
                                                                  results: try HeraldProcesses.freePort()) {
            $0["database"] = ["url": .string("postgresql://herald@\(hosts.hostAddress):\(server.port)/postgres"), "pool_size": 4]
        }
        try herald.startIngest(config: ingestConfig)
        try herald.startWorker(config: workerConfig, wrapper: hosts.wrapper)
        try herald.waitForWorkers(1)
        for index in 0..<40 { try herald.register(SDKDevice("pg-ns-\(index)", platform: index % 2 == 0 ? 1 : 3)) }
        let code = try herald.send(["send_date": "now", "content": "Across hosts on PostgreSQL"])
        let funnel = try herald.waitForMessage(code, timeout: 30)
        #expect(funnel["targeted"] == 40 && funnel["sent"] == 40 && funnel["failed"] == 0, "\(funnel.text)")
        #expect(Set(try herald.sinkHWIDs(code)).count == 40)
    }

    /// Two ingests on one database, each with its own CURVE key pair, and a worker that lists both
    /// public keys in the order of its endpoints: both ingests hear it, and when the dispatching one
    /// is killed the other finishes the campaign.
    @Test func aWorkerListingEachIngestsKeyFollowsTheDispatcherThroughAFailover() throws {
        let herald = try HeraldProcesses()
        let (keyA, keyB) = (try Self.keyPair(herald, "ingest-a"), try Self.keyPair(herald, "ingest-b"))
        let worker = try Self.keyPair(herald, "worker")
        let authorized = herald.folder + "/authorized_keys"
        try Data("\(worker.publicKey)\n".utf8).write(to: URL(fileURLWithPath: authorized))
        let ports = try (0..<4).map { _ in try HeraldProcesses.freePort() }
        let portB = try HeraldProcesses.freePort()
        func ingestConfig(_ name: String, key: String, jobs: UInt16, results: UInt16) throws -> String {
            try herald.writeConfig(name) {
                if name == "ingest-b.json" { $0["http"] = ["listen": .string("127.0.0.1:\(portB)"), "threads": 2] }
                $0["queue"] = Self.queue(host: "127.0.0.1", jobs: jobs, results: results,
                                         curve: ["secret_key_file": .string(key), "authorized_keys_file": .string(authorized)])
            }
        }
        let configA = try ingestConfig("ingest-a.json", key: keyA.file, jobs: ports[0], results: ports[1])
        let configB = try ingestConfig("ingest-b.json", key: keyB.file, jobs: ports[2], results: ports[3])
        let (jobsA, jobsB) = ("tcp://127.0.0.1:\(ports[0])", "tcp://127.0.0.1:\(ports[2])")
        let workerConfig = try herald.writeConfig("worker.json") {
            $0["queue"] = ["jobs": [.string(jobsA), .string(jobsB)],
                           "results": [.string("tcp://127.0.0.1:\(ports[1])"), .string("tcp://127.0.0.1:\(ports[3])")],
                           "curve": ["secret_key_file": .string(worker.file),
                                     "server_public_key": [.string(keyA.publicKey), .string(keyB.publicKey)]]]
        }
        try herald.startIngest(config: configA)
        try waitUntil("ingest A dispatching", timeout: 5) { IngestFailoverTests.health(herald.httpPort)?["dispatching"] == true }
        let ingestB = try HeraldProcesses.launch("herald-ingest", arguments: ["--config", configB], log: herald.folder + "/ingest-b.log")
        defer {
            kill(ingestB.processIdentifier, SIGKILL)
            ingestB.waitUntilExit()
        }
        try waitUntil("ingest B healthy", timeout: 10) { IngestFailoverTests.health(portB) != nil }
        try herald.startWorker(config: workerConfig)
        try waitUntil("both ingests hear the worker", timeout: 10) {
            IngestFailoverTests.health(herald.httpPort)?["workers"] == 1 && IngestFailoverTests.health(portB)?["workers"] == 1
        }
        let workerLog = { (try? String(contentsOfFile: herald.workerLogPath(0), encoding: .utf8)) ?? "" }
        // The handshake events are read beside the heartbeats, so the lines may follow them a little.
        try waitUntil("the worker logs both connections", timeout: 10) {
            let log = workerLog()
            return log.contains("connected to ingest") && log.contains(jobsA) && log.contains(jobsB)
        }

        let devices = 1500
        try herald.seedDevices(devices, prefix: "cm-")
        let clientB = DeviceAPIClient(port: portB)
        let request: JSON = ["auth": .string(HeraldProcesses.apiToken), "application": .string(HeraldProcesses.appCode),
                             "notifications": [["send_date": "now", "content": "Failover over CURVE", "send_rate": 300]]]
        let created = try clientB.call("createMessage", request)
        let code = try #require(created.body["response"]?["Messages"]?.arrayValue?.first?.stringValue, "\(created.body.text)")
        let before = try herald.waitForFunnel(code) { ($0["sent"]?.lenientInt ?? 0) > 0 }

        // Kill the dispatching ingest mid-campaign; B takes over and finishes it.
        herald.stopIngest(signal: SIGKILL)
        #expect((before["sent"]?.lenientInt ?? 0) < devices, "\(before.text)")
        try waitUntil("ingest B takes over", timeout: 12) { IngestFailoverTests.health(portB)?["dispatching"] == true }
        var funnel = JSON.null
        try waitUntil("the campaign done through B", timeout: 40) {
            funnel = try JSON.parse(try clientB.http.request("GET", "/api/v1/messages/\(code)",
                                                             headers: [("Authorization", "Token \(HeraldProcesses.apiToken)")]).body)
            return funnel["status"] == "done"
        }
        #expect(funnel["targeted"] == .int(Int64(devices)) && funnel["sent"] == .int(Int64(devices)) && funnel["failed"] == 0,
                "\(funnel.text)")
        // Every device got the push; a second copy only for a push counted ambiguous.
        let hwids = try herald.sinkHWIDs(code)
        let ambiguous = funnel["ambiguous"]?.lenientInt ?? 0
        #expect(Set(hwids).count == devices && hwids.count - devices <= ambiguous,
                "\(hwids.count) lines, \(Set(hwids).count) devices, \(ambiguous) ambiguous")
        // The worker says that the killed ingest is out of reach, naming its endpoint.
        try waitUntil("the worker warns about ingest A", timeout: 10) {
            workerLog().split(separator: "\n").contains { $0.contains("cannot reach ingest") && $0.contains(jobsA) }
        }
    }

    @Test func aWorkerWithAWrongServerKeyWarnsNamingTheEndpoint() throws {
        let herald = try HeraldProcesses()
        let ingestKey = try Self.keyPair(herald, "ingest")
        let otherKey = try Self.keyPair(herald, "not-ingest")
        let worker = try Self.keyPair(herald, "worker")
        let authorized = herald.folder + "/authorized_keys"
        try Data("\(worker.publicKey)\n".utf8).write(to: URL(fileURLWithPath: authorized))
        let (jobs, results) = (try HeraldProcesses.freePort(), try HeraldProcesses.freePort())
        let ingestConfig = try herald.writeConfig("ingest.json") {
            $0["queue"] = Self.queue(host: "127.0.0.1", jobs: jobs, results: results,
                                     curve: ["secret_key_file": .string(ingestKey.file), "authorized_keys_file": .string(authorized)])
        }
        let workerConfig = try herald.writeConfig("worker.json") {
            $0["queue"] = Self.queue(host: "127.0.0.1", jobs: jobs, results: results,
                                     curve: ["secret_key_file": .string(worker.file), "server_public_key": .string(otherKey.publicKey)])
        }
        try herald.startIngest(config: ingestConfig)
        try herald.startWorker(config: workerConfig)
        let workerLog = { (try? String(contentsOfFile: herald.workerLogPath(0), encoding: .utf8)) ?? "" }
        try waitUntil("the worker warns naming both endpoints", timeout: 15) {
            let warnings = workerLog().split(separator: "\n").filter { $0.contains("cannot reach ingest") }
            return warnings.contains { $0.contains("tcp://127.0.0.1:\(jobs)") } && warnings.contains { $0.contains("tcp://127.0.0.1:\(results)") }
        }
        #expect(!workerLog().contains("connected to ingest"), "\(workerLog().suffix(2000))")
        #expect(try Self.connectedWorkers(herald) == "herald_workers_connected 0")
    }

    /// Text of Z85's alphabet that is not Z85 (a group of 5 characters standing for more than
    /// 2^32 − 1) stops start-up like any bad key: exit 2 naming the key or line, before the
    /// database is opened (libzmq itself would refuse it only when the queue sockets are set up).
    @Test func undecodableKeysStopStartUpBeforeTheDatabaseOpens() throws {
        let herald = try HeraldProcesses()
        let ingestKey = try Self.keyPair(herald, "ingest")
        let workerKey = try Self.keyPair(herald, "worker")
        let undecodable = "#" + String(repeating: "0", count: 39)
        let secret = herald.folder + "/undecodable.key"
        try Data("\(undecodable)\n".utf8).write(to: URL(fileURLWithPath: secret))
        let listed = herald.folder + "/authorized_keys"
        try Data("\(workerKey.publicKey)\n".utf8).write(to: URL(fileURLWithPath: listed))
        let badList = herald.folder + "/bad_keys"
        try Data("\(workerKey.publicKey) worker-b\n$\(undecodable.dropFirst()) worker-a\n".utf8).write(to: URL(fileURLWithPath: badList))
        let (jobs, results) = (try HeraldProcesses.freePort(), try HeraldProcesses.freePort())
        let refusal = "characters 1–5 stand for more than 2^32 − 1"
        let cases: [(executable: String, curve: [String: JSON], error: String)] = [
            ("herald-ingest", ["secret_key_file": .string(secret), "authorized_keys_file": .string(listed)],
             "queue.curve.secret_key_file: \(secret) does not hold a Z85 CURVE secret key: \(refusal)"),
            ("herald-ingest", ["secret_key_file": .string(ingestKey.file), "authorized_keys_file": .string(badList)],
             "queue.curve.authorized_keys_file: \(badList) line 2 is not a Z85 CURVE public key: \(refusal)"),
            ("herald-worker", ["secret_key_file": .string(secret), "server_public_key": .string(ingestKey.publicKey)],
             "queue.curve.secret_key_file: \(secret) does not hold a Z85 CURVE secret key: \(refusal)"),
            ("herald-worker", ["secret_key_file": .string(workerKey.file), "server_public_key": .string(undecodable)],
             "queue.curve.server_public_key: is not a Z85 CURVE public key: \(refusal)"),
        ]
        for (executable, curve, error) in cases {
            let config = try herald.writeConfig("undecodable.json") {
                $0["queue"] = Self.queue(host: "127.0.0.1", jobs: jobs, results: results, curve: curve)
            }
            let run = try Self.run(executable, ["--config", config])
            #expect(run.status == 2 && run.output.contains(error), "\(executable): \(run)")
            #expect(try !Self.databaseCreated(herald), "\(executable) opened the database: \(run)")
        }
    }

    @Test func badKeysStopStartUpNamingTheKeyOrLine() throws {
        let herald = try HeraldProcesses()
        let ingestKey = try Self.keyPair(herald, "ingest")
        let badList = herald.folder + "/bad_keys"
        try Data("\(ingestKey.publicKey)\nnot a key\n".utf8).write(to: URL(fileURLWithPath: badList))
        let garbled = herald.folder + "/garbled.key"
        try Data("0123\n".utf8).write(to: URL(fileURLWithPath: garbled))
        func start(_ curve: [String: JSON]) throws -> (status: Int32, output: String) {
            let config = try herald.writeConfig("bad.json") { $0["queue"] = Self.queue(host: "127.0.0.1", jobs: 1, results: 2, curve: curve) }
            return try Self.run("herald-ingest", ["--config", config])
        }
        let line = try start(["secret_key_file": .string(ingestKey.file), "authorized_keys_file": .string(badList)])
        #expect(line.status == 2 && line.output.contains("queue.curve.authorized_keys_file") && line.output.contains("line 2"), "\(line)")
        let missing = try start(["secret_key_file": .string(herald.folder + "/none.key"), "authorized_keys_file": .string(badList)])
        #expect(missing.status == 2 && missing.output.contains("queue.curve.secret_key_file"), "\(missing)")
        let malformed = try start(["secret_key_file": .string(garbled)])
        #expect(malformed.status == 2 && malformed.output.contains("queue.curve.secret_key_file"), "\(malformed)")
        let noList = try start(["secret_key_file": .string(ingestKey.file)])
        #expect(noList.status == 2 && noList.output.contains("queue.curve.authorized_keys_file"), "\(noList)")
        // A worker needs ingest's public key.
        let config = try herald.writeConfig("worker-bad.json") {
            $0["queue"] = Self.queue(host: "127.0.0.1", jobs: 1, results: 2, curve: ["secret_key_file": .string(ingestKey.file)])
        }
        let worker = try Self.run("herald-worker", ["--config", config])
        #expect(worker.status == 2 && worker.output.contains("queue.curve.server_public_key"), "\(worker)")
        // One key per ingest: as many as queue.jobs lists.
        let twoKeys = try herald.writeConfig("worker-two-keys.json") {
            $0["queue"] = Self.queue(host: "127.0.0.1", jobs: 1, results: 2,
                                     curve: ["secret_key_file": .string(ingestKey.file),
                                             "server_public_key": [.string(ingestKey.publicKey), .string(ingestKey.publicKey)]])
        }
        let mismatched = try Self.run("herald-worker", ["--config", twoKeys])
        #expect(mismatched.status == 2 && mismatched.output.contains("queue.curve.server_public_key")
                && mismatched.output.contains("2 keys, queue.jobs 1 endpoint:"), "\(mismatched)")
        // An existing key file is never overwritten.
        let again = try Self.run("herald-ingest", ["--generate-curve-key", ingestKey.file])
        let kept = try CurveSettings.readSecretKey(path: ingestKey.file, key: "k")
        #expect(again.status != 0 && kept.count == 40, "\(again)")
    }
}
