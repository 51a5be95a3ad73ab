import Foundation
import Synchronization
import Testing
import Core
@testable import Delivery
@testable import HTTP2
import TestSupport

/// Makes a throwaway key with the openssl CLI (nothing is committed).
func generateKey(_ folder: TemporaryDirectory, _ arguments: [String]) throws -> String {
    let path = folder.file("key-\(UUID().uuidString).pem")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = ["genpkey"] + arguments + ["-out", path]
    process.standardError = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0)
    return path
}

@Suite struct DeliveryTests {
    let folder: TemporaryDirectory
    init() throws { folder = try TemporaryDirectory() }

    func response(_ status: Int, _ body: JSON? = nil, headers: HTTP2Headers = [:], sent: Bool = false) -> HTTP2Response {
        HTTP2Response(status: status, headers: headers, body: body?.encoded() ?? [], transportError: status == 0 ? "reset" : nil,
                      requestSent: sent)
    }

    @Test func base64URLHasNoPaddingAndTheURLAlphabet() {
        #expect(Base64URL.encode([0xFB, 0xFF]) == "-_8")
        #expect(Base64URL.decode("-_8") == [0xFB, 0xFF])
        #expect(Base64URL.encode(Array("{\"alg\":\"ES256\"}".utf8)) == "eyJhbGciOiJFUzI1NiJ9")
    }

    @Test func derSignaturesBecomePaddedRawPairs() throws {
        // SEQUENCE { INTEGER 0x01, INTEGER 0x00 0x80 … }: a short r and an s with a sign byte.
        let s = [UInt8](repeating: 0x80, count: 32)
        let der: [UInt8] = [0x30, 3 + 2 + 33, 0x02, 0x01, 0x01, 0x02, 33, 0x00] + s
        let raw = try SigningKey.rawECDSA(fromDER: der)
        #expect(raw.count == 64)
        #expect(Array(raw[0..<32]) == [UInt8](repeating: 0, count: 31) + [1])
        #expect(Array(raw[32...]) == s)
    }

    @Test func es256AndRS256TokensHaveTheRightShape() throws {
        let ec = try SigningKey(path: try generateKey(folder, ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]))
        let token = try JWT.sign(header: ["alg": "ES256", "kid": "KEY1234567"], claims: ["iss": "TEAM123456", "iat": 1_700_000_000],
                                 key: ec, algorithm: .es256)
        let parts = token.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        #expect(try JSON.parse(Base64URL.decode(parts[0]) ?? []) == ["alg": "ES256", "kid": "KEY1234567"])
        #expect(try JSON.parse(Base64URL.decode(parts[1]) ?? []) == ["iss": "TEAM123456", "iat": 1_700_000_000])
        #expect(Base64URL.decode(parts[2])?.count == 64)
        let rsa = try SigningKey(path: try generateKey(folder, ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]))
        let signed = try JWT.sign(header: ["alg": "RS256"], claims: ["iss": "a@b"], key: rsa, algorithm: .rs256)
        #expect(Base64URL.decode(String(signed.split(separator: ".")[2]))?.count == 256)
        #expect(throws: DeliveryError.self) { try SigningKey(pem: "not a key") }
    }

    @Test func providerTokensAreReusedAndRotatedAfterFiftyMinutes() throws {
        let clock = ManualClock(1_700_000_000)
        let key = try SigningKey(path: try generateKey(folder, ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"]))
        let cache = APNsTokenCache(teamID: "TEAM123456", keyID: "KEY1234567", key: key, clock: clock)
        let first = try cache.token()
        clock.advance(49 * 60)
        #expect(try cache.token() == first)
        clock.advance(60)
        let second = try cache.token()
        #expect(second != first)
        let issued: Int64? = 1_700_000_000 + 50 * 60
        #expect(cache.issuedAt == issued)
        // A refused token is replaced once; a second caller holding the same refused token gets the new one.
        clock.advance(1)
        let third = try cache.replace(second)
        #expect(third != second)
        #expect(try cache.replace(second) == third)
    }

    @Test func apnsRepliesMapToActions() {
        func verdict(_ r: HTTP2Response) -> Verdict { APNsProvider.verdict(r) }
        #expect(verdict(response(200)) == .sent)
        #expect(verdict(response(410, ["reason": "Unregistered", "timestamp": 1])) == .failed("Unregistered", deadToken: true))
        #expect(verdict(response(400, ["reason": "BadDeviceToken"])) == .failed("BadDeviceToken", deadToken: true))
        #expect(verdict(response(400, ["reason": "DeviceTokenNotForTopic"])) == .failed("DeviceTokenNotForTopic", deadToken: true))
        #expect(verdict(response(400, ["reason": "BadCollapseId"])) == .failed("BadCollapseId", deadToken: false))
        #expect(verdict(response(413, ["reason": "PayloadTooLarge"])) == .failed("PayloadTooLarge", deadToken: false))
        #expect(verdict(response(429, ["reason": "TooManyRequests"])) == .retry("TooManyRequests", after: nil, ambiguous: false))
        #expect(verdict(response(429, ["reason": "TooManyRequests"], headers: ["retry-after": "8"]))
                == .retry("TooManyRequests", after: 8, ambiguous: false))
        #expect(verdict(response(503, ["reason": "ServiceUnavailable"])) == .retry("ServiceUnavailable", after: nil, ambiguous: false))
        #expect(verdict(response(400, ["reason": "IdleTimeout"])) == .retry("IdleTimeout", after: nil, ambiguous: false))
        // A connection error before the request left is a plain retry; after it was written, the outcome is unknown.
        #expect(verdict(response(0)) == .retry("ConnectionError", after: nil, ambiguous: false))
        #expect(verdict(response(0, sent: true)) == .retry("ConnectionLost", after: nil, ambiguous: true))
        #expect(verdict(response(403, ["reason": "ExpiredProviderToken"])) == .renewCredentials("ExpiredProviderToken"))
        #expect(verdict(response(403, ["reason": "InvalidProviderToken"])) == .renewCredentials("InvalidProviderToken"))
        #expect(verdict(response(403, ["reason": "Forbidden"])) == .failed("Forbidden", deadToken: false))
        #expect(verdict(response(500)) == .retry("HTTP500", after: nil, ambiguous: false))
    }

    @Test func fcmErrorsMapToActions() {
        func fcmError(_ status: Int, _ name: String, _ code: String?) -> HTTP2Response {
            var error: [String: JSON] = ["code": .int(Int64(status)), "status": .string(name), "message": "m"]
            if let code {
                error["details"] = [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(code)]]
            }
            return response(status, ["error": .object(error)], headers: status == 429 ? ["retry-after": "7"] : [:])
        }
        func verdict(_ r: HTTP2Response) -> Verdict { FCMProvider.verdict(r) }
        #expect(verdict(response(200, ["name": "projects/p/messages/1"])) == .sent)
        #expect(verdict(fcmError(404, "NOT_FOUND", "UNREGISTERED")) == .failed("UNREGISTERED", deadToken: true))
        #expect(verdict(fcmError(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH")) == .failed("SENDER_ID_MISMATCH", deadToken: true))
        #expect(verdict(fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")) == .failed("INVALID_ARGUMENT", deadToken: false))
        #expect(verdict(fcmError(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED")) == .retry("QUOTA_EXCEEDED", after: 7, ambiguous: false))
        #expect(verdict(fcmError(503, "UNAVAILABLE", "UNAVAILABLE")) == .retry("UNAVAILABLE", after: nil, ambiguous: false))
        #expect(verdict(fcmError(502, "BAD_GATEWAY", nil)) == .retry("BAD_GATEWAY", after: nil, ambiguous: false))
        #expect(verdict(response(0, sent: true)) == .retry("ConnectionLost", after: nil, ambiguous: true))
        #expect(verdict(fcmError(401, "UNAUTHENTICATED", nil)) == .renewCredentials("UNAUTHENTICATED"))
        #expect(verdict(fcmError(404, "NOT_FOUND", nil)) == .failed("NOT_FOUND", deadToken: false))
    }

    @Test func apnsIDsAreStableUUIDs() {
        let id = APNsProvider.apnsID(message: 42, device: 7)
        #expect(id == APNsProvider.apnsID(message: 42, device: 7))
        #expect(id != APNsProvider.apnsID(message: 42, device: 8))
        #expect(UUID(uuidString: id) != nil)
        // The same ids as every earlier release, so a push retried across an upgrade keeps its id.
        #expect(id == "0000002a-0000-4000-8000-000000000007")
        #expect(APNsProvider.apnsID(message: 0xBEEF_1234_5678, device: 0x0ABC_DEF0_1234_5678) == "12345678-beef-4abc-8def-000012345678")
    }
}

@Suite struct RetryTests {
    let policy = RetryPolicy(defaultTTL: 3600)

    func retrying(ambiguous: Bool = false, after: Double? = nil) -> DeliveryRecord {
        DeliveryRecord(deviceID: 7, outcome: .retrying, reason: "ServiceUnavailable", retryAfter: after, ambiguous: ambiguous)
    }

    @Test func retriesBackOffExponentiallyWithJitterAndHonourRetryAfter() {
        #expect(policy.delay(attempts: 1, retryAfter: nil, jitter: 0) == 1)
        #expect(policy.delay(attempts: 4, retryAfter: nil, jitter: 0) == 8)
        #expect(policy.delay(attempts: 4, retryAfter: nil, jitter: 1) == 4)
        #expect(policy.delay(attempts: 30, retryAfter: nil, jitter: 0) == 60)
        #expect(policy.delay(attempts: 1, retryAfter: 8, jitter: 0.5) == 8)
    }

    @Test func aRetryIsScheduledUntilTheMessageExpiresThenFailsWithItsLastReason() {
        let scheduled = policy.resolve(retrying(), attempts: 1, ambiguousBefore: 0, expiresAt: 1_000 + 3600, now: 1_000, jitter: 0)
        #expect(scheduled.outcome == .retrying)
        #expect(scheduled.schedule == RetrySchedule(nextAt: 1_001, expiresAt: 4_600))
        let late = policy.resolve(retrying(), attempts: 6, ambiguousBefore: 0, expiresAt: 1_020, now: 1_000, jitter: 0)
        #expect(late == DeliveryRecord(deviceID: 7, outcome: .failed, reason: "ServiceUnavailable"))
        // A Retry-After beyond the expiry fails at once too.
        #expect(policy.resolve(retrying(after: 60), attempts: 1, ambiguousBefore: 0, expiresAt: 1_030, now: 1_000, jitter: 0).outcome == .failed)
        // Outcomes other than retrying pass unchanged.
        let sent = DeliveryRecord(deviceID: 7, outcome: .sent)
        #expect(policy.resolve(sent, attempts: 3, ambiguousBefore: 1, expiresAt: 0, now: 1_000, jitter: 0) == sent)
    }

    @Test func anUnknownOutcomeIsRetriedOnceOnly() {
        let first = policy.resolve(retrying(ambiguous: true), attempts: 1, ambiguousBefore: 0, expiresAt: 9_999, now: 1_000, jitter: 0)
        #expect(first.outcome == .retrying && first.ambiguous)
        let second = policy.resolve(retrying(ambiguous: true), attempts: 2, ambiguousBefore: 1, expiresAt: 9_999, now: 1_000, jitter: 0)
        #expect(second.outcome == .failed)
        // An ambiguous push that then meets a plain 503 keeps being retried.
        #expect(policy.resolve(retrying(), attempts: 2, ambiguousBefore: 1, expiresAt: 9_999, now: 1_000, jitter: 0).outcome == .retrying)
    }

    @Test func ttlComesFromTheMessageOrTheDefault() {
        var spec = MessageSpec(content: ["default": "Hello"])
        #expect(policy.ttl(of: .apns, spec) == 3600)
        spec.ios.ttl = 0
        spec.android.ttl = 120
        #expect(policy.ttl(of: .apns, spec) == 0)
        #expect(policy.ttl(of: .fcm, spec) == 120)
    }

    @Test func theBreakerOpensWhenMostOfABatchFailsProbesThenCloses() {
        let breaker = CircuitBreaker(provider: "apns", app: "APP")
        #expect(breaker.gate(now: 0) == .closed)
        // A few transient failures in a batch are normal.
        #expect(!breaker.observe(total: 500, transient: 4, reason: "ServiceUnavailable", retryAfter: nil, now: 0, jitter: 0))
        #expect(!breaker.observe(total: 8, transient: 4, reason: "ServiceUnavailable", retryAfter: nil, now: 0, jitter: 0))
        #expect(breaker.gate(now: 0) == .closed)
        #expect(breaker.observe(total: 500, transient: 300, reason: "ServiceUnavailable", retryAfter: nil, now: 10, jitter: 0))
        #expect(breaker.gate(now: 10.5) == .open(seconds: 0.5))
        // Batches sent before it opened, finishing meanwhile, neither close it nor extend it.
        #expect(!breaker.observe(total: 250, transient: 0, reason: nil, retryAfter: nil, now: 10.6, jitter: 0))
        #expect(!breaker.observe(total: 250, transient: 250, reason: "ServiceUnavailable", retryAfter: nil, now: 10.7, jitter: 0))
        #expect(breaker.gate(now: 11) == .probe)
        #expect(breaker.snapshot().open)
        // A failed probe opens it for twice as long; Retry-After can ask for longer.
        #expect(!breaker.observe(total: 20, transient: 20, reason: "ServiceUnavailable", retryAfter: nil, now: 11, jitter: 0))
        #expect(breaker.gate(now: 11) == .open(seconds: 2))
        breaker.observe(total: 20, transient: 20, reason: "TooManyRequests", retryAfter: 8, now: 13, jitter: 0)
        #expect(breaker.gate(now: 13) == .open(seconds: 8))
        #expect(breaker.snapshot().reason == "TooManyRequests")
        // A probe that goes well closes it.
        #expect(breaker.observe(total: 20, transient: 0, reason: nil, retryAfter: nil, now: 21, jitter: 0))
        #expect(breaker.gate(now: 21) == .closed)
        #expect(!breaker.snapshot().open)
    }
}

@Suite struct ConnectionHealthTests {
    @Test func aBrokenConnectionIsProbedOnceAfterABackOffThatGrows() {
        var health = ConnectionHealth()
        #expect(health.admission(now: 0) == .all)
        // Every transfer on the broken connection fails; only the first one counts.
        health.broken(probe: false, error: "Connection refused", now: 10, jitter: 0)
        health.broken(probe: false, error: "Connection refused", now: 10, jitter: 0)
        #expect(health.admission(now: 10.1) == .none)
        #expect(health.admission(now: 10.25) == .probe)
        #expect(health.admission(now: 10.3) == .none, "one probe at a time")
        // The probe fails: twice the wait, and what queues meanwhile fails at once.
        health.broken(probe: true, error: "Connection refused", now: 10.3, jitter: 0)
        #expect(health.admission(now: 10.5) == .failQueued)
        #expect(health.admission(now: 10.8) == .probe)
        health.broken(probe: true, error: "Connection refused", now: 10.8, jitter: 1)
        #expect(health.delay == 1 && health.state == .waiting(until: 11.3, failFast: true))
        // An answer ends it.
        #expect(health.admission(now: 11.3) == .probe)
        health.answered()
        #expect(health.admission(now: 11.4) == .all)
        for _ in 0..<20 { health.broken(probe: health.admission(now: 100) == .probe, error: "x", now: 0, jitter: 0) }
        #expect(health.delay <= ConnectionHealth.maxDelay)
    }
}

@Suite struct DeliveryStatsTests {
    @Test func countsPushesAndBucketsLatencies() {
        let stats = DeliveryStats()
        stats.count(provider: "apns", outcome: "sent")
        stats.count(provider: "apns", outcome: "sent")
        stats.count(provider: "fcm", outcome: "failed")
        stats.observe(provider: "apns", seconds: 0.003)
        stats.observe(provider: "apns", seconds: 0.04)
        stats.observe(provider: "apns", seconds: 60)
        let snapshot = stats.snapshot()
        #expect(Set(snapshot.pushes.map { "\($0.provider)|\($0.outcome)|\($0.count)" }) == ["apns|sent|2", "fcm|failed|1"])
        let apns = snapshot.latency.first { $0.provider == "apns" }
        #expect(apns?.count == 3)
        // 3 ms in the 5 ms bucket, 40 ms in the 50 ms bucket, 60 s beyond the last bound.
        #expect(apns?.buckets == [1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0])
        #expect(apns?.sum == 60.043)
        // What the heartbeat carries decodes to the same statistics on ingest's side.
        #expect(WorkerStatistics(json: snapshot.json) == snapshot)
        #expect((snapshot.process?.cpuSeconds ?? 0) > 0 && (snapshot.process?.residentBytes ?? 0) > 0)
    }

    @Test func countsRetriesConnectionsAndBreakers() {
        let stats = DeliveryStats()
        stats.countRetry(provider: "apns", reason: "ServiceUnavailable", ambiguous: false)
        stats.countRetry(provider: "apns", reason: "ConnectionLost", ambiguous: true)
        stats.connectionOpened(provider: "fcm")
        let breaker = CircuitBreaker(provider: "apns", app: "APP")
        stats.watch(breaker)
        breaker.observe(total: 10, transient: 10, reason: "ServiceUnavailable", retryAfter: nil, now: 0, jitter: 0)
        let snapshot = stats.snapshot()
        #expect(Set(snapshot.retries.map { "\($0.provider)|\($0.reason)|\($0.count)" }) == ["apns|ServiceUnavailable|1", "apns|ConnectionLost|1"])
        #expect(snapshot.ambiguous == [.init(provider: "apns", count: 1)])
        #expect(snapshot.connections == [.init(provider: "fcm", count: 1)])
        #expect(snapshot.circuits == [.init(provider: "apns", app: "APP", open: true, reason: "ServiceUnavailable", openings: 1)])
    }
}
