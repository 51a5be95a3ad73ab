import Foundation
import Synchronization
import Core
import SDKClient
import TestSupport
import Testing

/// Herald on PostgreSQL rides out a restart of the database server (an immediate shutdown, and a
/// SIGKILL of every server process mid-campaign) without being restarted itself: meanwhile writes
/// are answered 503 with `Retry-After` at once, never hang, and `/healthz` says the database is
/// unreachable; afterwards ingest and the workers carry on, and nothing acknowledged is lost.
@Suite(.fixedBackend("each test starts a PostgreSQL server of its own, to restart or stop it"))
struct PostgresOutageTests {
    /// Polls `/healthz` (any status) every 100 ms until its `dispatching` is `expected`, at most
    /// `timeout` seconds; returns the last body.
    @discardableResult
    static func waitForDispatching(_ herald: HeraldProcesses, _ expected: Bool, timeout: Double = 10, requestTimeout: Int = 5) -> JSON? {
        let deadline = Date().addingTimeInterval(timeout)
        var body: JSON?
        repeat {
            body = (try? herald.client.request("GET", "/healthz", timeoutSeconds: requestTimeout)).flatMap { try? JSON.parse($0.body) }
            if body?["dispatching"] == .bool(expected) { break }
            usleep(100_000)
        } while Date() < deadline
        return body
    }

    @Test func aDatabaseRestartIsAnsweredWith503AndRiddenOut() throws {
        let server = try PostgresServer()
        let herald = try HeraldProcesses(postgresURL: server.url)
        try herald.startIngest()
        try herald.startWorker()
        try herald.waitForWorkers(1)
        for index in 0..<30 { try herald.register(SDKDevice("before-\(index)", platform: index % 2 == 0 ? 1 : 3)) }
        #expect(Self.waitForDispatching(herald, true)?["dispatching"] == true)

        server.stop(immediately: true)
        let request = JSON.object(["request": ["application": .string(HeraldProcesses.appCode), "hwid": "during", "device_type": 3,
                                               "push_token": "t-during"]]).encoded()
        for _ in 0..<5 {
            let started = Date()
            let response = try herald.client.request("POST", "/json/1.3/registerDevice", body: request, timeoutSeconds: 10)
            #expect(response.status == 503 && response.headers["retry-after"] == "1", "\(response.status) \(response.text)")
            #expect(Date().timeIntervalSince(started) < 3, "a write while the database is down must not hang")
        }
        let health = try herald.client.request("GET", "/healthz", timeoutSeconds: 10)
        #expect(health.status == 503 && health.text.contains("degraded"), "\(health.text)")
        // Cut off from the database, ingest cannot renew its hold on the dispatcher role, so it stops
        // dispatching and says so (another ingest may take the role over meanwhile).
        let standingBy = Self.waitForDispatching(herald, false)
        #expect(standingBy?["dispatching"] == false, "\(standingBy?.text ?? "no answer")")
        let metrics = try herald.client.request("GET", "/metrics", timeoutSeconds: 10).text
        #expect(metrics.contains("\nherald_dispatcher_active 0\n") && !metrics.contains("\nherald_dispatcher{"), "\(metrics)")

        try server.start()
        let deadline = Date().addingTimeInterval(20)
        var recovered = false
        while !recovered && Date() < deadline {
            recovered = (try? herald.client.request("POST", "/json/1.3/registerDevice", body: request, timeoutSeconds: 10))?.status == 200
            if !recovered { usleep(200_000) }
        }
        #expect(recovered, "ingest did not recover within 20 s: \(herald.log().suffix(2000))")
        // One ERROR line for the burst of failing commits, naming the URL without a password, and one
        // INFO line when they succeed again; /healthz is ok once more.
        let log = herald.log()
        #expect(log.components(separatedBy: "database commits are failing").count - 1 == 1, "\(log.suffix(3000))")
        #expect(log.contains("database commits succeed again") && log.contains("database.url="), "\(log.suffix(3000))")
        #expect(try herald.client.request("GET", "/healthz", timeoutSeconds: 10).status == 200)
        #expect(Self.waitForDispatching(herald, true)?["dispatching"] == true, "\(herald.log().suffix(2000))")
        #expect(log.contains("standing by: the dispatcher role cannot be renewed"), "\(log.suffix(3000))")
        // The dispatcher failed at each of its steps (several a second) while the server was down: one
        // ERROR line with the reason, and one INFO line with the count once it works again.
        try waitUntil("the dispatcher logs its recovery", timeout: 5) { herald.log().contains("dispatcher recovered after") }
        let afterwards = herald.log()
        #expect(afterwards.components(separatedBy: "dispatcher step").count - 1 == 1, "\(afterwards.suffix(3000))")
        #expect(afterwards.contains(#/ERROR herald-ingest dispatcher step failed.* error=".*SQLSTATE/#), "\(afterwards.suffix(3000))")
        let count = try #require(afterwards.firstMatch(of: #/INFO herald-ingest dispatcher recovered after [0-9.]+ s failures=([0-9]+)/#))
        #expect(Int(count.1)! >= 2, "\(afterwards.suffix(3000))")
        #expect(herald.ingest?.isRunning == true && herald.workers.allSatisfy(\.isRunning))

        // The worker carries on too: a campaign reaches every device, those acknowledged before the crash included.
        let code = try herald.send(["content": "Back"])
        let funnel = try herald.waitForMessage(code, timeout: 30)
        #expect(funnel["targeted"] == .int(31) && funnel["sent"] == .int(31), "\(funnel)")
        #expect(Set(try herald.sinkHWIDs(code)).count == 31)
    }

    /// A server that stops answering without closing anything (all its processes SIGSTOPped, as a
    /// frozen host or a silent network looks) gets the calls already waiting on it answered 503
    /// with `Retry-After` once `database.statement_timeout_ms` and a second have passed, instead of
    /// holding them until the client gives up; once the server answers again, so does Herald.
    @Test func callsWaitingOnAFrozenServerAreAnswered503AfterTheStatementTimeout() throws {
        let server = try PostgresServer()
        let herald = try HeraldProcesses(postgresURL: server.url)
        let config = try herald.writeConfig("bounded.json") { config in
            config["database"] = ["url": .string(server.url), "pool_size": 4, "statement_timeout_ms": 2000]
        }
        try herald.startIngest(config: config)
        let app = JSON.string(HeraldProcesses.appCode)
        try herald.register(SDKDevice("frozen", platform: 1))
        let calls = [("getTags", JSON.object(["request": ["application": app, "hwid": "frozen"]]).encoded()),
                     ("registerDevice", JSON.object(["request": ["application": app, "hwid": "during", "device_type": 3,
                                                                 "push_token": "t-during"]]).encoded())]
        let port = herald.httpPort
        /// Each call at once, on a client of its own; the statuses and Retry-After headers, in order.
        func callAll(timeoutSeconds: Int) -> [String] {
            let answers = Mutex([String](repeating: "no answer", count: calls.count))
            DispatchQueue.concurrentPerform(iterations: calls.count) { index in
                let response = try? HTTPClient(port: port).request("POST", "/json/1.3/\(calls[index].0)", body: calls[index].1,
                                                                   timeoutSeconds: timeoutSeconds)
                answers.withLock { $0[index] = response.map { "\($0.status) \($0.headers["retry-after"] ?? "-")" } ?? "no answer" }
            }
            return answers.withLock { $0 }
        }
        // Several calls at once leave several connections open in the pool, for the calls below to
        // find waiting on the frozen server.
        for _ in 0..<3 { _ = callAll(timeoutSeconds: 10) }
        #expect(callAll(timeoutSeconds: 10) == ["200 -", "200 -"])

        try server.freeze()
        defer { try? server.thaw() }
        // The bound is 3 s; the client waits far longer than that.
        #expect(callAll(timeoutSeconds: 30) == ["503 1", "503 1"], "\(herald.log().suffix(2000))")
        let health = try herald.client.request("GET", "/healthz", timeoutSeconds: 30)
        #expect(health.status == 503, "\(health.text)")

        try server.thaw()
        let deadline = Date().addingTimeInterval(30)
        var answered = callAll(timeoutSeconds: 10)
        while answered != ["200 -", "200 -"] && Date() < deadline {
            usleep(200_000)
            answered = callAll(timeoutSeconds: 10)
        }
        #expect(answered == ["200 -", "200 -"], "\(herald.log().suffix(2000))")
        #expect(herald.log().contains("no answer from the server within 3000 ms"), "\(herald.log().suffix(3000))")
        #expect(herald.ingest?.isRunning == true)
    }

    /// While a renewal of the dispatcher role waits on a frozen server (bounded only by the 30 s
    /// statement timeout set here), the ingest stops counting itself as the dispatcher once its
    /// last renewal is older than the hold time: a standby may have taken over by then.
    @Test func aDispatcherWhoseRenewalHangsStandsByOnceItsHoldRunsOut() throws {
        let server = try PostgresServer()
        let herald = try HeraldProcesses(postgresURL: server.url)
        let config = try herald.writeConfig("slow.json") { config in
            config["database"] = ["url": .string(server.url), "pool_size": 4, "statement_timeout_ms": 30000, "busy_timeout_ms": 2000]
        }
        try herald.startIngest(config: config)
        #expect(Self.waitForDispatching(herald, true)?["dispatching"] == true)

        try server.freeze()
        defer { try? server.thaw() }
        // The next renewal (once a second) is then waiting on the frozen server, with a connection
        // it opened before (the health check below would drop those, and renewals would fail fast).
        usleep(1_500_000)
        let standingBy = Self.waitForDispatching(herald, false, timeout: Double(Pipeline.dispatcherLeaseSeconds) + 8, requestTimeout: 10)
        #expect(standingBy?["dispatching"] == false, "\(standingBy?.text ?? "no answer")")

        try server.thaw()
        let dispatching = Self.waitForDispatching(herald, true, timeout: 40, requestTimeout: 10)
        #expect(dispatching?["dispatching"] == true, "\(herald.log().suffix(2000))")
    }

    /// The JSON routes answer like the Pushwoosh ones: a rich media download (what the SDK
    /// retries), the in-app list, the events API, a message's funnel and a bulkSetTags progress
    /// query get 503 with `Retry-After` while the database is down, and 200 once it is back.
    @Test func theJSONRoutesAnswer503WithRetryAfterWhileTheDatabaseIsDown() throws {
        let server = try PostgresServer()
        let herald = try HeraldProcesses(postgresURL: server.url)
        try herald.startIngest()
        let app = HeraldProcesses.appCode
        let authorization = [("Authorization", "Token \(HeraldProcesses.apiToken)")]
        #expect(try herald.client.request("PUT", "/api/v1/apps/\(app)/rich-media/page", body: ZipBuilder.page.bytes,
                                          headers: authorization).status == 200)
        let reads = [
            "/rich-media/\(app)/page.zip", "/api/v1/apps/\(app)/in-apps", "/api/v1/apps/\(app)/events",
            "/api/v1/messages/NO-SUCH-MESSAGE", "/api/v2/audience/bulkSetTags/no-such-request",
        ]
        func statuses() -> [Int] {
            reads.map { (try? herald.client.request("GET", $0, headers: authorization, timeoutSeconds: 10))?.status ?? 0 }
        }
        #expect(statuses() == [200, 200, 200, 404, 404])

        server.stop(immediately: true)
        for path in reads {
            let response = try herald.client.request("GET", path, headers: authorization, timeoutSeconds: 10)
            #expect(response.status == 503 && response.headers["retry-after"] == "1", "\(path): \(response.status) \(response.text)")
            #expect(response.text.contains("retry after Retry-After"), "\(path): \(response.text)")
        }

        try server.start()
        let deadline = Date().addingTimeInterval(20)
        var answered = statuses()
        while answered != [200, 200, 200, 404, 404] && Date() < deadline {
            usleep(200_000)
            answered = statuses()
        }
        #expect(answered == [200, 200, 200, 404, 404], "\(herald.log().suffix(2000))")
    }

    @Test func aSIGKILLOfPostgreSQLMidCampaignLosesNothing() throws {
        let server = try PostgresServer()
        let herald = try HeraldProcesses(postgresURL: server.url)
        try herald.startIngest()
        for _ in 0..<2 { try herald.startWorker() }
        try herald.waitForWorkers(2)
        let total = 600
        for index in 0..<total { try herald.register(SDKDevice("k-\(index)", platform: index % 2 == 0 ? 1 : 3)) }
        // 100 pushes a second: the campaign is still going when the server dies.
        let code = try herald.send(["content": "Through the crash", "send_rate": 100])
        try herald.waitForFunnel(code) { ($0["sent"]?.lenientInt ?? 0) >= 100 }

        try server.crash()
        let request = JSON.object(["request": ["application": .string(HeraldProcesses.appCode), "hwid": "during", "device_type": 3,
                                               "push_token": "t-during"]]).encoded()
        let answer = try herald.client.request("POST", "/json/1.3/registerDevice", body: request, timeoutSeconds: 10)
        #expect(answer.status == 503 && answer.headers["retry-after"] != nil, "\(answer.status) \(answer.text)")
        sleep(2)
        try server.start()

        let funnel = try herald.waitForMessage(code, timeout: 60)
        #expect(funnel["targeted"] == .int(Int64(total)) && funnel["sent"] == .int(Int64(total)) && funnel["failed"] == .int(0), "\(funnel)")
        // Every device got the push. A batch a worker wrote to the sink but could not record
        // before the crash is sent again (never more than the in-flight window of 500 per worker).
        let hwids = try herald.sinkHWIDs(code)
        #expect(Set(hwids).count == total, "\(Set(hwids).count) of \(total) devices reached")
        #expect(hwids.count - total <= 1000, "\(hwids.count - total) duplicates")
        // ... and counted: each was sent again as ambiguous.
        #expect(hwids.count - total <= Int(funnel["ambiguous"]?.lenientInt ?? 0), "\(hwids.count - total) duplicates, funnel \(funnel)")
        #expect(herald.ingest?.isRunning == true && herald.workers.allSatisfy(\.isRunning), "\(herald.log().suffix(2000))")
        // A write acknowledged after the restart is kept as well.
        #expect(try herald.client.request("POST", "/json/1.3/registerDevice", body: request, timeoutSeconds: 10).status == 200)
        print("SIGKILL of PostgreSQL mid-campaign: \(hwids.count - total) pushes sent twice, \(total) devices reached")
    }
}
