import Foundation
import Core
import SDKClient
import TestSupport
import Testing

/// Herald on PostgreSQL rides out a restart of the database server (here a crash) without being
/// restarted itself: meanwhile writes are answered 503 with `Retry-After` at once, never hang, and
/// `/healthz` says the database is unreachable; afterwards ingest and the worker carry on, and
/// nothing acknowledged before the crash is lost.
@Suite struct PostgresOutageTests {
    @Test func aDatabaseRestartIsAnsweredWith503AndRiddenOut() throws {
        let server = try PostgresServer()
        let herald = try HeraldProcesses(postgresURL: server.url)
        try herald.startIngest()
        try herald.startWorker()
        try herald.waitForWorkers(1)
        for index in 0..<30 { try herald.register(SDKDevice("before-\(index)", platform: index % 2 == 0 ? 1 : 3)) }

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
        #expect(herald.ingest?.isRunning == true && herald.workers.allSatisfy(\.isRunning))

        // The worker carries on too: a campaign reaches every device, those acknowledged before the crash included.
        let code = try herald.send(["content": "Back"])
        let funnel = try herald.waitForMessage(code, timeout: 30)
        #expect(funnel["targeted"] == .int(31) && funnel["sent"] == .int(31), "\(funnel)")
        #expect(Set(try herald.sinkHWIDs(code)).count == 31)
    }
}
