import Foundation
import Testing
@testable import Core
import TestSupport

@Suite struct ConfigurationTests {
    static let minimalApp: JSON = ["code": "ABCDE-12345", "api_token": "t", "sink": "out/sink.jsonl"]

    func decode(_ json: JSON) throws(ConfigurationError) -> Configuration {
        try Configuration.decode(json, baseDirectory: "/etc/herald")
    }

    func problem(_ json: JSON) -> ConfigurationError? {
        do {
            _ = try decode(json)
            return nil
        } catch {
            return error
        }
    }

    @Test func minimalFileGetsSafeDefaults() throws {
        let config = try decode(["apps": [Self.minimalApp]])
        #expect(config.logLevel == .info)
        #expect(config.http.host == "127.0.0.1" && config.http.port == 8080)
        #expect(config.http.maxBodyBytes == 1_048_576)
        #expect(config.http.connectionLimit == 4096 && config.http.headerTimeoutSeconds == 20)
        #expect(config.http.bodyTimeoutSeconds == 20 && config.http.bodyMinBytesPerSecond == 500)
        #expect(config.database.path == "/etc/herald/var/herald.sqlite")
        #expect(config.queue.jobs == ["tcp://127.0.0.1:5557"])
        #expect(config.queue.results == ["tcp://127.0.0.1:5558"])
        #expect(config.throttle.perDeviceCount == 10 && config.throttle.perDeviceWindowSeconds == 3600)
        #expect(config.database.synchronousFull && config.delivery.defaultTTLSeconds == 3600)
        #expect(config.apps.first?.sink == "/etc/herald/out/sink.jsonl")
        #expect(config.apps.first?.name == "ABCDE-12345")
    }

    @Test func designDocumentExampleDecodes() throws {
        let json = try JSON.parse("""
            {
              "log_level": "DEBUG",
              "http": { "listen": "[::1]:9090", "max_body_bytes": 2048 },
              "database": { "path": "/var/lib/herald/h.sqlite" },
              "queue": { "jobs": "tcp://127.0.0.1:6557", "results": "ipc:///tmp/results" },
              "throttle": { "per_device": { "count": 3, "window_seconds": 60 } },
              "apps": [{
                "code": "ABCDE-12345", "name": "Shop", "api_token": "secret",
                "apns": { "team_id": "ABCDE12345", "key_id": "KEY1234567", "key_path": "keys/AuthKey.p8",
                          "topic": "com.example.shop", "production_url": "https://api.push.apple.com",
                          "sandbox_url": "https://api.sandbox.push.apple.com", "ca_file": null },
                "fcm": { "service_account_path": "keys/sa.json", "endpoint": "https://fcm.googleapis.com" }
              }]
            }
            """)
        let config = try decode(json)
        #expect(config.logLevel == .debug)
        #expect(config.http.host == "::1" && config.http.port == 9090 && config.http.maxBodyBytes == 2048)
        #expect(config.database.path == "/var/lib/herald/h.sqlite")
        #expect(config.queue.results == ["ipc:///tmp/results"])
        #expect(config.throttle.perDeviceCount == 3)
        let app = try #require(config.apps.first)
        #expect(app.apns?.keyPath == "/etc/herald/keys/AuthKey.p8")
        #expect(app.apns?.caFile == nil)
        #expect(app.fcm?.serviceAccountPath == "/etc/herald/keys/sa.json")
    }

    @Test func retentionTakesDaysWithFractionsAndMustCoverTheFrequencyCap() throws {
        let defaults = try decode(["apps": [Self.minimalApp]])
        #expect(defaults.retention.reportsSeconds == 90 * 86_400 && defaults.retention.deliveriesSeconds == 90 * 86_400)
        #expect(defaults.retention.bulkJobsSeconds == 30 * 86_400)
        let config = try decode(["apps": [Self.minimalApp], "retention": ["reports_days": 0.5, "deliveries_days": 2, "bulk_jobs_days": 1]])
        #expect(config.retention.reportsSeconds == 43_200 && config.retention.deliveriesSeconds == 172_800)
        #expect(config.retention.bulkJobsSeconds == 86_400)
        for (retention, key) in [(["reports_days": 0], "retention.reports_days"), (["reports_days": "1"], "retention.reports_days"),
                                 (["bulk_jobs_days": -1], "retention.bulk_jobs_days"),
                                 (["deliveries_days": 40_000], "retention.deliveries_days"),
                                 // an hour's frequency cap counts delivery rows younger than an hour
                                 (["deliveries_days": 0.01], "retention.deliveries_days")] as [(JSON, String)] {
            #expect(problem(["apps": [Self.minimalApp], "retention": retention])?.key == key, "\(retention)")
        }
    }

    @Test func errorsNameTheKey() {
        #expect(problem([:])?.key == "apps")
        #expect(problem(["apps": []])?.key == "apps")
        #expect(problem(["apps": [Self.minimalApp], "htttp": [:]])?.key == "htttp")
        #expect(problem(["apps": [Self.minimalApp], "log_level": "LOUD"])?.key == "log_level")
        #expect(problem(["apps": [Self.minimalApp], "http": ["listen": "localhost"]])?.key == "http.listen")
        #expect(problem(["apps": [Self.minimalApp], "http": ["max_body_bytes": "big"]])?.key == "http.max_body_bytes")
        #expect(problem(["apps": [Self.minimalApp], "queue": ["jobs": "127.0.0.1:1"]])?.key == "queue.jobs")
        #expect(problem(["apps": [Self.minimalApp], "database": ["synchronous": "off"]])?.key == "database.synchronous")
        #expect(problem(["apps": [Self.minimalApp], "http": ["public_url": "ftp://x"]])?.key == "http.public_url")
        #expect(problem(["apps": [Self.minimalApp], "throttle": ["per_device": ["count": 0]]])?.key == "throttle.per_device.count")
        #expect(problem(["apps": [["code": "A", "sink": "s"]]])?.key == "apps[0].api_token")
        #expect(problem(["apps": [["code": "A", "api_token": "t"]]])?.key == "apps[0]")
        #expect(problem(["apps": [Self.minimalApp, Self.minimalApp]])?.key == "apps[1].code")
        #expect(problem(["apps": [["code": "A", "api_token": "t", "apns": ["team_id": "T"]]]])?.key == "apps[0].apns.key_id")
        #expect(problem(["apps": [["code": "A", "api_token": "t", "fcm": ["service_account_path": "x", "endpoint": "http://x"]]]])?.key
            == "apps[0].fcm.endpoint")
    }

    @Test func declaredTagTypesAndReservedPaths() throws {
        let config = try decode(["apps": [["code": "A", "api_token": "t", "sink": "s", "tags": ["AppVersion": "version", "Level": "integer"]]]])
        #expect(config.apps[0].tagTypes == ["AppVersion": .version, "Level": .integer])
        #expect(problem(["apps": [["code": "A", "api_token": "t", "sink": "s", "tags": ["X": "float"]]]])?.key == "apps[0].tags.X")
        #expect(problem(["apps": [Self.minimalApp], "http": ["onesignal": ["add_device_path": "/json/1.3/x"]]])?.key
            == "http.onesignal.add_device_path")
        #expect(problem(["apps": [["code": "A", "api_token": "t", "sink": ""]]])?.key == "apps[0].sink")
        #expect(problem(["apps": [Self.minimalApp], "http": ["max_body_bytes": 10.5]])?.problem.contains("decimal") == true)
    }

    @Test func connectionDeadlinesDecodeAndAreBounded() throws {
        let config = try decode(["apps": [Self.minimalApp], "http": [
            "connection_limit": 64, "header_timeout_seconds": 5, "body_timeout_seconds": 7, "body_min_bytes_per_second": 0,
        ]])
        #expect(config.http.connectionLimit == 64 && config.http.headerTimeoutSeconds == 5)
        #expect(config.http.bodyTimeoutSeconds == 7 && config.http.bodyMinBytesPerSecond == 0)
        for (key, value) in [("header_timeout_seconds", JSON.int(0)), ("body_timeout_seconds", .int(3601)),
                             ("body_min_bytes_per_second", .int(-1)), ("header_timeout_seconds", .string("20s"))] {
            #expect(problem(["apps": [Self.minimalApp], "http": .object([key: value])])?.key == "http.\(key)")
        }
    }

    @Test func deliveryWindowAndProviderConnectionsDecodeAndAreBounded() throws {
        let defaults = try decode(["apps": [Self.minimalApp]])
        #expect(defaults.delivery.maxInFlight == 4000)
        let app: JSON = [
            "code": "ABCDE-12345", "api_token": "t",
            "apns": ["team_id": "T", "key_id": "K", "key_path": "k.p8", "topic": "t", "connections": 4],
            "fcm": ["service_account_path": "sa.json", "connections": 8],
        ]
        let config = try decode(["delivery": ["max_in_flight": 600], "apps": [app]])
        #expect(config.delivery.maxInFlight == 600)
        #expect(config.apps[0].apns?.connections == 4 && config.apps[0].fcm?.connections == 8)
        let plain = try decode(["apps": [["code": "ABCDE-12345", "api_token": "t", "apns": ["team_id": "T", "key_id": "K",
                                                                                             "key_path": "k.p8", "topic": "t"]]]])
        #expect(plain.apps[0].apns?.connections == APNsSettings.defaultConnections)
        #expect(problem(["delivery": ["max_in_flight": 0], "apps": [Self.minimalApp]])?.key == "delivery.max_in_flight")
        let tooMany: JSON = ["code": "ABCDE-12345", "api_token": "t", "fcm": ["service_account_path": "sa.json", "connections": 65]]
        #expect(problem(["apps": [tooMany]])?.key == "apps[0].fcm.connections")
    }

    @Test func webPushSettingsDecodeAndNameTheirKeys() throws {
        func app(_ web: JSON) -> JSON { ["apps": [["code": "ABCDE-12345", "api_token": "t", "web": web]]] }
        let config = try decode(app(["vapid_private_key_file": "keys/vapid.pem", "subject": "mailto:ops@example.com", "ca_file": "ca.pem"]))
        let web = try #require(config.apps[0].web)
        #expect(web.vapidPrivateKeyFile == "/etc/herald/keys/vapid.pem" && web.subject == "mailto:ops@example.com")
        #expect(web.caFile == "/etc/herald/ca.pem" && web.connections == WebPushSettings.defaultConnections)
        #expect(try decode(app(["vapid_private_key_file": "k", "subject": "https://shop.example/contact"])).apps[0].web?.caFile == nil)
        #expect(problem(app(["subject": "mailto:a@b"]))?.key == "apps[0].web.vapid_private_key_file")
        #expect(problem(app(["vapid_private_key_file": "k"]))?.key == "apps[0].web.subject")
        let subject = problem(app(["vapid_private_key_file": "k", "subject": "ops@example.com"]))
        #expect(subject?.key == "apps[0].web.subject" && subject?.problem == "expected a mailto: or https:// URI (RFC 8292)")
        #expect(problem(app(["vapid_private_key_file": "k", "subject": "mailto:"]))?.key == "apps[0].web.subject")
        #expect(problem(app(["vapid_private_key_file": "k", "subject": "mailto:a@b", "ca_file": ""]))?.key == "apps[0].web.ca_file")
        #expect(problem(app(["vapid_private_key_file": "k", "subject": "mailto:a@b", "vapid_key": "x"]))?.key == "apps[0].web.vapid_key")
        #expect(web.allowsPrivateEndpoints == false)
        let allowed = try decode(app(["vapid_private_key_file": "k", "subject": "mailto:a@b", "allow_private_endpoints": true]))
        #expect(allowed.apps[0].web?.allowsPrivateEndpoints == true)
        let flag = problem(app(["vapid_private_key_file": "k", "subject": "mailto:a@b", "allow_private_endpoints": "yes"]))
        #expect(flag?.key == "apps[0].web.allow_private_endpoints" && flag?.problem == "expected true or false, found string")
    }

    @Test func listenAddressesParse() {
        #expect(Configuration.parseListenAddress("127.0.0.1:8080")! == ("127.0.0.1", 8080))
        #expect(Configuration.parseListenAddress("[::1]:0")! == ("::1", 0))
        #expect(Configuration.parseListenAddress("127.0.0.1") == nil)
        #expect(Configuration.parseListenAddress("localhost:80") == nil)
        #expect(Configuration.parseListenAddress("1.2.3.4:70000") == nil)
    }

    @Test func commandLineOptions() throws {
        #expect(try CommandLineOptions.parse(["--help"], environment: [:]) == .help)
        #expect(try CommandLineOptions.parse(["--version"], environment: [:]) == .version)
        #expect(try CommandLineOptions.parse(["--config", "a.json"], environment: [:]) == .run(configPath: "a.json", logLevel: nil))
        #expect(try CommandLineOptions.parse(["--log-level=verbose"], environment: ["HERALD_CONFIG": "b.json"])
            == .run(configPath: "b.json", logLevel: .verbose))
        #expect(throws: ConfigurationError.self) { try CommandLineOptions.parse([], environment: [:]) }
        #expect(throws: ConfigurationError.self) { try CommandLineOptions.parse(["--config"], environment: [:]) }
        #expect(throws: ConfigurationError.self) { try CommandLineOptions.parse(["--log-level", "LOUD", "-c", "x"], environment: [:]) }
        #expect(throws: ConfigurationError.self) { try CommandLineOptions.parse(["--frobnicate"], environment: [:]) }
        #expect(try CommandLineOptions.parse(["--generate-curve-key", "k"], environment: [:]) == .generateCurveKey(path: "k"))
        #expect(throws: ConfigurationError.self) { try CommandLineOptions.parse(["--generate-curve-key"], environment: [:]) }
        #expect(try CommandLineOptions.parse(["--generate-vapid-key", "v.pem"], environment: [:]) == .generateVAPIDKey(path: "v.pem"))
        #expect(throws: ConfigurationError.self) { try CommandLineOptions.parse(["--generate-vapid-key="], environment: [:]) }
    }

    @Test func curveKeysAreReadAndCheckedNamingTheKeyAndLine() throws {
        let folder = try TemporaryDirectory()
        // Z85 text of 32 bytes each, not real key pairs: only the format is checked here.
        let secret = String(repeating: "a1B.", count: 10)
        let worker = String(repeating: "Zz9+", count: 10)
        try Data((secret + "\n").utf8).write(to: URL(fileURLWithPath: folder.file("ingest.key")))
        try Data("# workers\n\n\(worker) host-b\n".utf8).write(to: URL(fileURLWithPath: folder.file("authorized")))
        try Data("\(worker)\nnot-a-key\n".utf8).write(to: URL(fileURLWithPath: folder.file("bad-authorized")))
        try Data("short\n".utf8).write(to: URL(fileURLWithPath: folder.file("bad.key")))
        func queue(_ curve: JSON, extra: [String: JSON] = [:]) -> JSON {
            var queue: [String: JSON] = ["jobs": "tcp://10.0.0.1:5557", "results": "tcp://10.0.0.1:5558", "curve": curve]
            queue.merge(extra) { _, new in new }
            return ["apps": [Self.minimalApp], "queue": .object(queue)]
        }
        let config = try Configuration.decode(queue(["secret_key_file": "ingest.key", "authorized_keys_file": "authorized"]),
                                              baseDirectory: folder.path)
        let curve = try #require(config.queue.curve)
        #expect(curve.secretKey == secret && curve.authorizedKeys == [worker])
        try config.queue.checkIngest()
        #expect(throws: ConfigurationError.self) { try config.queue.checkWorker() }

        func problem(_ json: JSON) -> ConfigurationError? {
            do {
                _ = try Configuration.decode(json, baseDirectory: folder.path)
                return nil
            } catch {
                return error
            }
        }
        #expect(problem(queue(["secret_key_file": "missing.key"]))?.key == "queue.curve.secret_key_file")
        #expect(problem(queue(["secret_key_file": "bad.key"]))?.key == "queue.curve.secret_key_file")
        #expect(problem(queue(["secret_key_file": "ingest.key", "server_public_key": "xyz"]))?.key == "queue.curve.server_public_key")
        // 40 characters of Z85's alphabet whose first group stands for more than 2^32 − 1: not a key.
        let overflowing = "#" + String(repeating: "0", count: 39)
        try Data((overflowing + "\n").utf8).write(to: URL(fileURLWithPath: folder.file("overflowing.key")))
        let secretProblem = problem(queue(["secret_key_file": "overflowing.key", "authorized_keys_file": "authorized"]))
        #expect(secretProblem?.key == "queue.curve.secret_key_file"
                && secretProblem?.problem.hasSuffix("does not hold a Z85 CURVE secret key: characters 1–5 stand for more than 2^32 − 1") == true,
                "\(String(describing: secretProblem))")
        #expect(secretProblem?.problem.contains(overflowing) == false)
        let serverProblem = problem(queue(["secret_key_file": "ingest.key", "server_public_key": .string(overflowing)]))
        #expect(serverProblem?.description == "queue.curve.server_public_key: is not a Z85 CURVE public key: characters 1–5 stand for more than 2^32 − 1")
        let badLine = problem(queue(["secret_key_file": "ingest.key", "authorized_keys_file": "bad-authorized"]))
        #expect(badLine?.key == "queue.curve.authorized_keys_file" && badLine?.problem.contains("line 2") == true, "\(String(describing: badLine))")
        #expect(problem(queue(["secret_key_file": "ingest.key", "bogus": 1]))?.key == "queue.curve.bogus")
    }

    @Test func authorizedKeysFilesFromOtherEditorsAreRead() throws {
        let folder = try TemporaryDirectory()
        let keys = [String(repeating: "Zz9+", count: 10), "%nSc0" + String(repeating: "a1B.", count: 8) + "a1B", String(repeating: "x", count: 40)]
        let path = folder.file("authorized")
        // A line starting with `#` is a comment, even when a key follows: no key starts with `#`.
        try Data("# workers\r\n\(keys[0])\thost-b\r\n\r\n  \(keys[1]) host-c\r\n\(keys[2])\r\n#\(keys[0]) retired\r\n  # old host-d\r\n".utf8)
            .write(to: URL(fileURLWithPath: path))
        #expect(try CurveSettings.readAuthorizedKeys(path: path, key: "k") == Set(keys))
        try Data("\(keys[0])\r\n#not a key either\r\n\(keys[2])x\r\n".utf8).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: ConfigurationError.self) { try CurveSettings.readAuthorizedKeys(path: path, key: "k") }
        #expect(error?.problem == "\(path) line 3 is not a Z85 CURVE public key: 41 characters, not 40")
        // 40 characters of the alphabet are not enough: `$` starts a group above 2^32 − 1.
        try Data("\(keys[0])\n$\(String(repeating: "0", count: 39)) worker-a\n".utf8).write(to: URL(fileURLWithPath: path))
        let overflow = #expect(throws: ConfigurationError.self) { try CurveSettings.readAuthorizedKeys(path: path, key: "k") }
        #expect(overflow?.problem == "\(path) line 2 is not a Z85 CURVE public key: characters 1–5 stand for more than 2^32 − 1")
    }

    @Test func serverPublicKeyIsOneKeyForEveryIngestOrOnePerIngestInOrder() throws {
        let folder = try TemporaryDirectory()
        try Data((String(repeating: "a1B.", count: 10) + "\n").utf8).write(to: URL(fileURLWithPath: folder.file("worker.key")))
        let (keyA, keyB) = (String(repeating: "Aa1+", count: 10), String(repeating: "Bb2-", count: 10))
        func worker(_ server: JSON, jobs: [JSON] = ["tcp://10.0.0.5:5557", "tcp://10.0.0.6:5557"]) throws(ConfigurationError) -> Configuration {
            let results = JSON.array(jobs.indices.map { .string("tcp://10.0.0.\(5 + $0):5558") })
            return try Configuration.decode(["apps": [Self.minimalApp],
                                             "queue": ["jobs": .array(jobs), "results": results,
                                                       "curve": ["secret_key_file": "worker.key", "server_public_key": server]]],
                                            baseDirectory: folder.path)
        }
        func problem(_ server: JSON) -> ConfigurationError? {
            do {
                _ = try worker(server)
                return nil
            } catch {
                return error
            }
        }
        // A string: the ingests share one key pair.
        let shared = try worker(.string(keyA))
        #expect(shared.queue.curve?.serverPublicKeys == [keyA, keyA])
        try shared.queue.checkWorker()
        // A list: paired by position with queue.jobs and queue.results.
        let paired = try worker([.string(keyA), .string(keyB)])
        #expect(paired.queue.curve?.serverPublicKeys == [keyA, keyB])
        #expect(try worker([.string(keyB)], jobs: ["tcp://10.0.0.5:5557"]).queue.curve?.serverPublicKeys == [keyB])
        // A list of another length names the key and says how many were expected.
        let short = problem([.string(keyA), .string(keyB), .string(keyA)])
        #expect(short?.key == "queue.curve.server_public_key" && short?.problem.contains("3 keys, queue.jobs 2 endpoints") == true,
                "\(String(describing: short))")
        #expect(problem([.string(keyA), "not-a-key"])?.key == "queue.curve.server_public_key[1]")
        #expect(problem([.string("$" + keyA.dropFirst()), .string(keyB)])?.key == "queue.curve.server_public_key[0]")
        #expect(problem([])?.key == "queue.curve.server_public_key")
        #expect(problem([.string(keyA), 7])?.key == "queue.curve.server_public_key")
        #expect(problem(7)?.key == "queue.curve.server_public_key")
    }

    @Test func ingestListensBeyondLoopbackOnlyWithCurve() throws {
        func check(_ jobs: String, allow: Bool = false) -> String? {
            var settings = QueueSettings()
            settings.jobs = [jobs]
            settings.allowInsecureRemote = allow
            do {
                try settings.checkIngest()
                return nil
            } catch {
                return error.key
            }
        }
        #expect(check("tcp://127.0.0.1:5557") == nil)
        #expect(check("tcp://[::1]:5557") == nil)
        #expect(check("ipc:///run/herald/jobs") == nil)
        #expect(check("tcp://0.0.0.0:5557") == "queue.jobs")
        #expect(check("tcp://*:5557") == "queue.jobs")
        #expect(check("tcp://10.1.2.3:5557") == "queue.jobs")
        #expect(check("tcp://0.0.0.0:5557", allow: true) == nil)
        // Workers list every ingest's endpoints; an ingest binds exactly one.
        let workers = try decode(["apps": [Self.minimalApp], "queue": ["jobs": ["ipc:///a/jobs", "ipc:///b/jobs"],
                                                                         "results": ["ipc:///a/results", "ipc:///b/results"]]])
        #expect(workers.queue.jobs == ["ipc:///a/jobs", "ipc:///b/jobs"])
        #expect(throws: ConfigurationError.self) { try workers.queue.checkIngest() }
        #expect(problem(["apps": [Self.minimalApp], "queue": ["jobs": ["ipc:///a/jobs", "ipc:///b/jobs"]]])?.key == "queue.results")
        #expect(problem(["apps": [Self.minimalApp], "queue": ["jobs": []]])?.key == "queue.jobs")
        let config = try decode(["apps": [Self.minimalApp], "queue": ["allow_insecure_remote": true]])
        #expect(config.queue.allowInsecureRemote)
        #expect(problem(["apps": [Self.minimalApp], "queue": ["allow_insecure_remote": "yes"]])?.key == "queue.allow_insecure_remote")
    }

    /// An endpoint that cannot be bound or connected to stops start-up when the file is read,
    /// naming its key (and its position in a list), before anything opens.
    @Test func malformedEndpointsAreRefusedWhenTheFileIsRead() throws {
        func queueProblem(_ queue: [String: JSON]) -> ConfigurationError? { problem(["apps": [Self.minimalApp], "queue": .object(queue)]) }
        let noPort = queueProblem(["jobs": "tcp://127.0.0.1"])
        #expect(noPort?.key == "queue.jobs" && noPort?.problem.contains("expected tcp://host:port") == true, "\(String(describing: noPort))")
        let badPort = queueProblem(["jobs": "tcp://127.0.0.1:abc"])
        #expect(badPort?.key == "queue.jobs" && badPort?.problem.contains("from 1 to 65535") == true)
        #expect(queueProblem(["jobs": "tcp://127.0.0.1:0"])?.key == "queue.jobs")
        #expect(queueProblem(["jobs": "tcp://127.0.0.1:65536"])?.key == "queue.jobs")
        #expect(queueProblem(["results": "tcp://:5558"])?.key == "queue.results")
        #expect(queueProblem(["jobs": "ipc://"])?.key == "queue.jobs")
        #expect(queueProblem(["jobs": .string("ipc:///" + String(repeating: "d", count: 107))])?.key == "queue.jobs")
        let second = queueProblem(["jobs": ["tcp://10.0.0.5:5557", "tcp://10.0.0.6"], "results": ["tcp://10.0.0.5:5558", "tcp://10.0.0.6:5558"]])
        #expect(second?.key == "queue.jobs[1]", "\(String(describing: second))")
        // A worker connects to host names; ingest binds only *, addresses and interfaces.
        let worker = try decode(["apps": [Self.minimalApp], "queue": ["jobs": "tcp://ingest-a.example:5557", "results": "tcp://ingest-a.example:5558"]])
        #expect(worker.queue.jobs == ["tcp://ingest-a.example:5557"])
        #expect(throws: ConfigurationError.self) { try worker.queue.checkIngest() }
        var local = QueueSettings()
        local.jobs = ["tcp://localhost:5557"]
        do {
            try local.checkIngest()
            Issue.record("tcp://localhost:5557 passed the bind check")
        } catch {
            #expect(error.key == "queue.jobs" && error.problem.contains("not a host name"), "\(error)")
        }
        local.jobs = ["tcp://lo:5557"]
        try local.checkIngest()
        local.jobs = ["tcp://[::1]:5557"]
        try local.checkIngest()
        // A link-local address names its interface (here loopback's, which every host has).
        #expect(QueueEndpoint.bindProblem("tcp://[fe80::1%lo]:5557") == nil)
        #expect(QueueEndpoint.bindProblem("tcp://[fe80::1%1]:5557") == nil)
        #expect(QueueEndpoint.bindProblem("tcp://[fe80::1%no-such-interface]:5557") != nil)
    }
}
