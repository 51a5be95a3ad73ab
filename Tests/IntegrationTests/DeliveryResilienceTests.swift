import Foundation
import Core
import SDKClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Provider trouble at a realistic 200 ms latency: a burst of 503s, a long outage that ends with the
/// provider killed and restarted, 429s with `Retry-After` for every token, and a worker killed in the
/// middle of a campaign. Each is checked against the mocks' own record of every request: every
/// device ends with exactly one accepted push (or, after a worker crash, at most the ambiguous ones
/// twice), and nothing is lost.
@Suite(.serialized) struct DeliveryResilienceTests {
    static let latency = ["--latency-ms", "200"]

    /// Registers `count` devices of `platform` (1 iOS, 3 Android); returns their tokens.
    /// Pushes a worker has on the network at most with the default settings: its APNs connections
    /// times the 1,000 streams the mock announces, capped by `delivery.max_in_flight`.
    static let window = min(DeliverySettings().maxInFlight, APNsSettings.defaultConnections * 1000)
    /// Pushes a worker keeps unrecorded at most: the window and two batches waiting for a stream,
    /// capped by `delivery.max_in_flight` (what a killed worker can leave ambiguous).
    static let unrecorded = min(DeliverySettings().maxInFlight, window + 2 * Pipeline.deliveryBatchSize)

    static func register(_ rig: DeliveryRig, _ prefix: String, count: Int, platform: Int) throws -> [String] {
        try (0..<count).map { index in
            let hwid = "\(prefix)-\(index)"
            let token = deviceToken("", seed: hwid)
            try rig.register(hwid, platform: platform, token: token)
            return token
        }
    }

    /// The tokens that were not accepted exactly once, with their counts.
    static func notExactlyOnce(_ tokens: [String], _ accepted: [String: Int]) -> [String: Int] {
        var wrong: [String: Int] = [:]
        for token in tokens where accepted[token] != 1 { wrong[token] = accepted[token] ?? 0 }
        return wrong
    }

    static func int(_ funnel: JSON, _ key: String) -> Int64 { funnel[key]?.lenientInt ?? -1 }

    // MARK: - 1. A burst of 503s

    @Test func aBurstOf503sIsRiddenOutOnTheSameConnections() throws {
        let rig = try DeliveryRig(apnsArguments: Self.latency)
        let tokens = try Self.register(rig, "ios", count: 3000, platform: 1)
        try rig.apns.admin("POST", "/reset")

        // The burst is on when the campaign starts and ends once it has answered some of the
        // campaign's pushes and lasted a second (bounded: 20 s), however fast or slow the machine
        // makes the campaign: the pushes it refused are retried on the same connections.
        try rig.apns.admin("POST", "/outage?status=503")
        let code = try rig.herald.send(["send_date": "now", "content": "Hello"])
        let burstStarted = Date()
        for _ in 0..<200 {
            if (try rig.apns.stats()["outage_answers"]?.lenientInt ?? 0) > 0 && Date().timeIntervalSince(burstStarted) >= 1 { break }
            usleep(100_000)
        }
        try rig.apns.admin("POST", "/outage?status=0")
        let funnel = try rig.herald.waitForMessage(code, timeout: 60)

        #expect(Self.int(funnel, "sent") == 3000 && Self.int(funnel, "failed") == 0 && Self.int(funnel, "retrying") == 0, "\(funnel.text)")
        let stats = try rig.apns.stats()
        #expect((stats["outage_answers"]?.lenientInt ?? 0) > 0, "the burst hit the campaign: \(stats.text)")
        #expect(Self.notExactlyOnce(tokens, try rig.apns.acceptedPerToken()).isEmpty)
        // No connection per retry: the worker's two connections carry the whole campaign.
        #expect((stats["connections"]?.lenientInt ?? 99) <= 4, "\(stats.text)")

        // /metrics names the retries and the connections (workers report once a second).
        let metrics = try rig.herald.waitForMetrics { $0.contains("herald_push_retries_total{") && $0.contains("reason=\"ServiceUnavailable\"") }
        #expect(metrics.contains("herald_provider_connections_opened_total{"), "\(metrics)")
        #expect(metrics.contains("herald_retries_pending 0"), "\(metrics)")
    }

    // MARK: - 2. A 20 s outage: 500s, then the provider dies and comes back

    @Test func aLongOutageLosesNothingAndSendsEachPushOnce() throws {
        let rig = try DeliveryRig(apnsArguments: Self.latency)
        let tokens = try Self.register(rig, "ios", count: 1000, platform: 1)
        try rig.apns.admin("POST", "/outage?status=500")

        let code = try rig.herald.send(["send_date": "now", "content": "Hello"])
        // While the provider fails, the pushes wait as retries and the worker pauses instead of
        // burning through the audience.
        let during = try rig.herald.waitForFunnel(code) { Self.int($0, "retrying") > 0 }
        #expect(Self.int(during, "failed") == 0, "\(during.text)")
        Thread.sleep(forTimeInterval: 8)
        let dashboard = try rig.herald.dashboardPage()
        #expect(dashboard.contains("APNs is failing"), "the dashboard shows the failing provider")
        try rig.restartAPNs(downFor: 12)

        let funnel = try rig.herald.waitForMessage(code, timeout: 120)
        #expect(Self.int(funnel, "sent") == 1000 && Self.int(funnel, "failed") == 0, "\(funnel.text)")
        #expect(funnel["errors"] == [:], "\(funnel.text)")
        #expect(Self.notExactlyOnce(tokens, try rig.apns.acceptedPerToken()).isEmpty)
        let log = rig.workerLog()
        #expect(log.contains("provider failing; sending paused"), "\(log.suffix(2000))")
        #expect(log.contains("sending resumed"), "\(log.suffix(2000))")
    }

    // MARK: - 3. 429 with Retry-After for every token

    @Test func tooManyRequestsForEveryTokenIsWaitedOut() throws {
        let rig = try DeliveryRig(apnsArguments: Self.latency, fcmArguments: Self.latency)
        let iOS = try Self.register(rig, "ios", count: 500, platform: 1)
        let android = try Self.register(rig, "and", count: 500, platform: 3)
        for mock in [rig.apns, rig.fcm] { try mock.admin("POST", "/outage?status=429&seconds=8&retry_after=3") }

        let code = try rig.herald.send(["send_date": "now", "content": "Hello"])
        let funnel = try rig.herald.waitForMessage(code, timeout: 90)
        #expect(Self.int(funnel, "sent") == 1000 && Self.int(funnel, "failed") == 0, "\(funnel.text)")
        #expect(Self.notExactlyOnce(iOS, try rig.apns.acceptedPerToken()).isEmpty)
        #expect(Self.notExactlyOnce(android, try rig.fcm.acceptedPerToken()).isEmpty)
        for mock in [rig.apns, rig.fcm] {
            let stats = try mock.stats()
            #expect((stats["outage_answers"]?.lenientInt ?? 0) > 0, "\(stats.text)")
            #expect((stats["connections"]?.lenientInt ?? 99) <= 5, "\(stats.text)")
        }
    }

    // MARK: - 4. Connections dropped with requests on them

    @Test func pushesOnADroppedConnectionAreSentOnceMoreAndCountedAsAmbiguous() throws {
        // A whole second of latency keeps requests on the connections nearly all the time (the
        // worker's gaps between batches are milliseconds), so the drop always catches some, however
        // loaded the machine is.
        let rig = try DeliveryRig(apnsArguments: ["--latency-ms", "1000"])
        let tokens = try Self.register(rig, "ios", count: 2000, platform: 1)
        try rig.apns.admin("POST", "/reset")

        let code = try rig.herald.send(["send_date": "now", "content": "Hello"])
        // The worker's window holds the whole audience, so its requests are all on the network
        // within the first second: the drop comes as soon as the mock has some (bounded: 10 s).
        for _ in 0..<100 where (try rig.apns.stats()["requests"]?.lenientInt ?? 0) == 0 { usleep(100_000) }
        let connectionsBefore = try rig.apns.stats()["connections"]?.lenientInt ?? 0
        // Drop the connections while requests are on them; on a loaded machine the worker may be
        // between batches at the first try, and then nothing is cut (bounded: 20 tries).
        var dropped = JSON.null
        var closed: Int64 = 0
        for _ in 0..<20 {
            dropped = try rig.apns.admin("POST", "/drop")
            closed += dropped["closed"]?.lenientInt ?? 0
            if (dropped["unanswered"]?.lenientInt ?? 0) > 0 { break }
            usleep(100_000)
        }
        #expect((dropped["closed"]?.lenientInt ?? 0) > 0 && (dropped["unanswered"]?.lenientInt ?? 0) > 0, "\(dropped.text)")
        let funnel = try rig.herald.waitForMessage(code, timeout: 60)

        #expect(Self.int(funnel, "sent") == 2000 && Self.int(funnel, "failed") == 0, "\(funnel.text)")
        // The requests waiting on the dropped connections had been written: their outcome was unknown.
        #expect(Self.int(funnel, "ambiguous") > 0 && Self.int(funnel, "ambiguous") <= Self.window, "\(funnel.text)")
        // Each is sent once more: every device gets the push, and only an ambiguous one may get it twice
        // (the mock had answered it, but the answer died with the connection).
        let accepted = try rig.apns.acceptedPerToken()
        let wrong = Self.notExactlyOnce(tokens, accepted)
        #expect(wrong.values.allSatisfy { $0 == 2 }, "\(wrong)")
        #expect(Int64(wrong.count) <= Self.int(funnel, "ambiguous"), "\(wrong.count) duplicates, \(funnel.text)")
        // The worker reconnected once per connection closed (by every try), not once per request.
        let reopened = (try rig.apns.stats()["connections"]?.lenientInt ?? 99) - connectionsBefore
        #expect(reopened <= closed, "\(reopened) connections opened after \(closed) were closed")
        try rig.herald.waitForMetrics { $0.contains("herald_push_ambiguous_total{") }
    }

    // MARK: - 5. A worker killed mid-campaign

    @Test func aWorkerKilledMidCampaignDuplicatesOnlyWhatItHadInFlight() throws {
        let rig = try DeliveryRig(workers: 2, apnsArguments: Self.latency)
        let tokens = try Self.register(rig, "ios", count: 6000, platform: 1)

        let code = try rig.herald.send(["send_date": "now", "content": "Hello"])
        try rig.herald.waitForFunnel(code) { Self.int($0, "sent") > 0 }
        rig.herald.killWorker(0)

        let funnel = try rig.herald.waitForMessage(code, timeout: 90)
        #expect(Self.int(funnel, "sent") == 6000 && Self.int(funnel, "failed") == 0, "\(funnel.text)")
        let accepted = try rig.apns.acceptedPerToken()
        #expect(tokens.allSatisfy { (accepted[$0] ?? 0) >= 1 }, "every device got the push")
        let duplicates = tokens.filter { (accepted[$0] ?? 0) > 1 }.count
        let ambiguous = Self.int(funnel, "ambiguous")
        // Only what the dead worker had handed to APNs without recording it is sent again, once, and
        // counted as ambiguous: at most what it kept unrecorded.
        #expect(tokens.allSatisfy { (accepted[$0] ?? 0) <= 2 })
        #expect(duplicates <= ambiguous, "\(duplicates) duplicates, funnel \(funnel.text)")
        #expect(ambiguous <= Self.unrecorded, "\(funnel.text)")
    }
}
