import Foundation
import Synchronization
import Testing
import Core
@testable import Delivery
import HTTP2
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

    func response(_ status: Int, _ body: JSON? = nil, headers: [String: String] = [:]) -> HTTP2Response {
        HTTP2Response(status: status, headers: headers, body: body?.encoded() ?? [], transportError: status == 0 ? "reset" : nil)
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
        typealias V = APNsProvider.Verdict
        func verdict(_ r: HTTP2Response) -> V { APNsProvider.verdict(r, attempt: 0, backoff: 0.5) }
        #expect(verdict(response(200)) == .sent)
        #expect(verdict(response(410, ["reason": "Unregistered", "timestamp": 1])) == .failed("Unregistered", deadToken: true))
        #expect(verdict(response(400, ["reason": "BadDeviceToken"])) == .failed("BadDeviceToken", deadToken: true))
        #expect(verdict(response(400, ["reason": "DeviceTokenNotForTopic"])) == .failed("DeviceTokenNotForTopic", deadToken: true))
        #expect(verdict(response(400, ["reason": "BadCollapseId"])) == .failed("BadCollapseId", deadToken: false))
        #expect(verdict(response(413, ["reason": "PayloadTooLarge"])) == .failed("PayloadTooLarge", deadToken: false))
        #expect(verdict(response(429, ["reason": "TooManyRequests"])) == .retry("TooManyRequests", delay: 1, fresh: false))
        #expect(verdict(response(503, ["reason": "ServiceUnavailable"])) == .retry("ServiceUnavailable", delay: 0.5, fresh: true))
        #expect(verdict(response(0)) == .retry("ConnectionError", delay: 0.5, fresh: true))
        #expect(verdict(response(403, ["reason": "ExpiredProviderToken"])) == .credentials("ExpiredProviderToken"))
        #expect(verdict(response(403, ["reason": "InvalidProviderToken"])) == .credentials("InvalidProviderToken"))
        #expect(verdict(response(403, ["reason": "Forbidden"])) == .failed("Forbidden", deadToken: false))
        #expect(APNsProvider.verdict(response(500), attempt: 2, backoff: 0.5) == .retry("HTTP500", delay: 2, fresh: true))
    }

    @Test func fcmErrorsMapToActions() {
        typealias V = FCMProvider.Verdict
        func fcmError(_ status: Int, _ name: String, _ code: String?) -> HTTP2Response {
            var error: [String: JSON] = ["code": .int(Int64(status)), "status": .string(name), "message": "m"]
            if let code {
                error["details"] = [["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(code)]]
            }
            return response(status, ["error": .object(error)], headers: status == 429 ? ["retry-after": "7"] : [:])
        }
        func verdict(_ r: HTTP2Response) -> V { FCMProvider.verdict(r, attempt: 0, backoff: 0.5) }
        #expect(verdict(response(200, ["name": "projects/p/messages/1"])) == .sent)
        #expect(verdict(fcmError(404, "NOT_FOUND", "UNREGISTERED")) == .failed("UNREGISTERED", deadToken: true))
        #expect(verdict(fcmError(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH")) == .failed("SENDER_ID_MISMATCH", deadToken: true))
        #expect(verdict(fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT")) == .failed("INVALID_ARGUMENT", deadToken: false))
        #expect(verdict(fcmError(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED")) == .retry("QUOTA_EXCEEDED", delay: 7, fresh: false))
        #expect(verdict(fcmError(503, "UNAVAILABLE", "UNAVAILABLE")) == .retry("UNAVAILABLE", delay: 1, fresh: true))
        #expect(verdict(fcmError(401, "UNAUTHENTICATED", nil)) == .refreshToken)
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
        #expect(snapshot["pushes"] == ["apns|sent": 2, "fcm|failed": 1])
        let apns = snapshot["latency"]?["apns"]
        #expect(apns?["count"] == 3)
        // 3 ms in the 5 ms bucket, 40 ms in the 50 ms bucket, 60 s beyond the last bound.
        #expect(apns?["buckets"] == [1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0])
        #expect(apns?["sum"]?.lenientDouble == 60.043)
    }
}
