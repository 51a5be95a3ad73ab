import Core
import Delivery
import HTTP2Server
@testable import Loadgen
import Testing

/// The edge's APNs provider-token check: what Apple accepts, and each of Apple's refusals.
struct ProviderTokenCheckTests {
    let key: KeyPair
    let signer: SigningKey
    let check: ProviderTokenCheck
    let now: Int64 = 1_800_000_000

    init() throws {
        key = try KeyPair(generating: .p256)
        signer = try SigningKey(pem: try key.privatePEM())
        check = ProviderTokenCheck(key: key, teamID: "TEAM123456", keyID: "KEY1234567")
    }

    func token(kid: String = "KEY1234567", iss: String = "TEAM123456", iat: Int64? = nil, signer: SigningKey? = nil) throws -> String {
        try JWT.sign(header: ["alg": "ES256", "kid": .string(kid)], claims: ["iss": .string(iss), "iat": .int(iat ?? now)],
                     key: signer ?? self.signer, algorithm: .es256)
    }

    @Test func aTokenSignedByTheKeyOfTheTeamIsAccepted() throws {
        #expect(check.refusal(authorization: "bearer " + (try token()), now: now) == nil)
        // The same token again (remembered) and with a capital Bearer.
        #expect(check.refusal(authorization: "Bearer " + (try token()), now: now + 10) == nil)
        #expect(check.refusal(authorization: "bearer " + (try token(iat: now - 3500)), now: now) == nil)
    }

    @Test func applesRefusalsForBadTokens() throws {
        #expect(check.refusal(authorization: nil, now: now) == "MissingProviderToken")
        #expect(check.refusal(authorization: "", now: now) == "MissingProviderToken")
        #expect(check.refusal(authorization: "Basic abc", now: now) == "InvalidProviderToken")
        #expect(check.refusal(authorization: "bearer not.a.jwt", now: now) == "InvalidProviderToken")
        #expect(check.refusal(authorization: "bearer " + (try token(kid: "OTHERKEY00")), now: now) == "InvalidProviderToken")
        #expect(check.refusal(authorization: "bearer " + (try token(iss: "OTHERTEAM0")), now: now) == "InvalidProviderToken")
        let stranger = try SigningKey(pem: try KeyPair(generating: .p256).privatePEM())
        #expect(check.refusal(authorization: "bearer " + (try token(signer: stranger)), now: now) == "InvalidProviderToken")
        // A token with one character of its signature changed (not the last: its low bits are padding).
        var tampered = Array(try token())
        let index = tampered.count - 10
        tampered[index] = tampered[index] == "A" ? "B" : "A"
        let forged = String(tampered)
        #expect(check.refusal(authorization: "bearer " + forged, now: now) == "InvalidProviderToken")
    }

    @Test func ageCountsFromIat() throws {
        #expect(check.refusal(authorization: "bearer " + (try token(iat: now - 3601)), now: now) == "ExpiredProviderToken")
        // A verified token grows old too.
        let fresh = "bearer " + (try token(iat: now - 100))
        #expect(check.refusal(authorization: fresh, now: now) == nil)
        #expect(check.refusal(authorization: fresh, now: now + 3600) == "ExpiredProviderToken")
        #expect(check.refusal(authorization: "bearer " + (try token(iat: now + 600)), now: now) == "InvalidProviderToken")
    }
}

/// The edge's OAuth token endpoint check of a service account's RS256 assertion.
struct AssertionCheckTests {
    let key: KeyPair
    let signer: SigningKey
    let check: AssertionCheck
    let now: Int64 = 1_800_000_000
    static let uri = "https://127.0.0.1:4443/token"

    init() throws {
        key = try KeyPair(generating: .rsa(bits: 2048))
        signer = try SigningKey(pem: try key.privatePEM())
        check = AssertionCheck(key: key, clientEmail: "sa@p.iam.gserviceaccount.com", tokenURI: Self.uri)
    }

    func form(_ claims: [String: JSON] = [:], algorithm: String = "RS256", grant: String = AssertionCheck.grantType) throws -> [String: String] {
        var all: [String: JSON] = ["iss": "sa@p.iam.gserviceaccount.com", "aud": .string(Self.uri), "iat": .int(now), "exp": .int(now + 3600),
                                   "scope": "https://www.googleapis.com/auth/firebase.messaging"]
        all.merge(claims) { _, new in new }
        let assertion = try JWT.sign(header: ["alg": .string(algorithm), "typ": "JWT"], claims: .object(all), key: signer, algorithm: .rs256)
        return ["grant_type": grant, "assertion": assertion]
    }

    func refusal(_ form: [String: String]) -> AssertionCheck.Refusal? {
        do { try check.check(form: form, now: now) } catch { return error }
        return nil
    }

    @Test func theServiceAccountsAssertionIsAccepted() throws {
        #expect(refusal(try form()) == nil)
        #expect(refusal(try form(["scope": "https://www.googleapis.com/auth/cloud-platform openid"])) == nil)
    }

    @Test func googlesRefusals() throws {
        #expect(refusal([:])?.error == "invalid_request")
        #expect(refusal(try form(grant: "client_credentials"))?.error == "unsupported_grant_type")
        #expect(refusal(["grant_type": AssertionCheck.grantType])?.error == "invalid_request")
        #expect(refusal(try form(algorithm: "HS256"))?.description == "Invalid JWT Signature.")
        let stranger = AssertionCheck(key: try KeyPair(generating: .rsa(bits: 2048)), clientEmail: "sa@p.iam.gserviceaccount.com", tokenURI: Self.uri)
        #expect(throws: AssertionCheck.Refusal.self) { try stranger.check(form: try form(), now: now) }
        #expect(refusal(try form(["iss": "other@p.iam.gserviceaccount.com"]))?.description == "Invalid email or User ID")
        #expect(refusal(try form(["aud": "https://oauth2.googleapis.com/token"]))?.description.hasPrefix("Invalid JWT: Failed audience check") == true)
        #expect(refusal(try form(["exp": .int(now + 7200)]))?.error == "invalid_grant")
        #expect(refusal(try form(["iat": .int(now - 7200), "exp": .int(now - 3600)]))?.error == "invalid_grant")
        #expect(refusal(try form(["scope": ""]))?.error == "invalid_scope")
        #expect(refusal(try form(["scope": "https://www.googleapis.com/auth/userinfo.email"]))?.error == "invalid_scope")
    }
}
