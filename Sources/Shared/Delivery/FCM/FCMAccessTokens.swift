import Foundation
import Synchronization
import Core
import HTTP2

/// A Google service account, as the JSON key file gives it.
public struct ServiceAccount: Sendable {
    public var projectID: String
    public var clientEmail: String
    public var privateKeyID: String?
    public var privateKey: String
    public var tokenURI: String

    public init(path: String) throws(DeliveryError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DeliveryError(message: "cannot read service account file \(path)", errno: Glibc.errno)
        }
        guard let json = try? JSON.parse(data) else { throw DeliveryError(message: "\(path) is not JSON", errno: 0) }
        func field(_ name: String) throws(DeliveryError) -> String {
            guard let value = json[name]?.stringValue, !value.isEmpty else {
                throw DeliveryError(message: "\(path): \(name) is missing", errno: 0)
            }
            return value
        }
        projectID = try field("project_id")
        clientEmail = try field("client_email")
        privateKey = try field("private_key")
        tokenURI = try field("token_uri")
        privateKeyID = json["private_key_id"]?.stringValue
    }
}

/// OAuth2 access tokens for FCM from a service account: an RS256 JWT assertion exchanged at the
/// account's `token_uri`, cached until five minutes before it expires.
public final class FCMAccessTokens: Sendable {
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    let account: ServiceAccount
    private let key: SigningKey
    private let client: any HTTP2Transport
    private let clock: any Clock
    private let cached = Mutex<(token: String, validUntil: Int64)?>(nil)
    /// Held while a token is fetched, so that shards asking at once share one fetch.
    private let fetching = NSLock()

    public init(account: ServiceAccount, client: any HTTP2Transport, clock: any Clock) throws(DeliveryError) {
        self.account = account
        self.key = try SigningKey(pem: account.privateKey)
        self.client = client
        self.clock = clock
    }

    /// A valid access token; `replacing` forces a new one when that token was refused.
    public func token(replacing refused: String? = nil) throws(DeliveryError) -> String {
        let now = clock.now()
        if let current = cached.withLock({ $0 }), current.validUntil > now, current.token != refused { return current.token }
        fetching.lock()
        defer { fetching.unlock() }
        // Another caller may have fetched one while this one waited.
        if let current = cached.withLock({ $0 }), current.validUntil > now, current.token != refused { return current.token }
        var header: JSON = ["alg": "RS256", "typ": "JWT"]
        if let keyID = account.privateKeyID, case .object(var members) = header {
            members["kid"] = .string(keyID)
            header = .object(members)
        }
        let assertion = try JWT.sign(
            header: header,
            claims: ["iss": .string(account.clientEmail), "scope": .string(Self.scope), "aud": .string(account.tokenURI),
                     "iat": .int(now), "exp": .int(now + 3600)],
            key: key, algorithm: .rs256)
        let body = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"
        let response = client.send([HTTP2Request(url: account.tokenURI, headers: ["content-type: application/x-www-form-urlencoded"],
                                                 body: Array(body.utf8))])[0]
        guard response.status == 200, let json = try? JSON.parse(response.body), let token = json["access_token"]?.stringValue else {
            let detail = (try? JSON.parse(response.body))?["error_description"]?.stringValue ?? response.transportError ?? "HTTP \(response.status)"
            let transient = response.status == 0 || response.status == 429 || response.status >= 500
            throw DeliveryError(message: transient ? "the token endpoint could not be reached (\(detail))"
                                    : "the token endpoint refused the service account (\(detail))", errno: 0, transient: transient)
        }
        let lifetime = json["expires_in"]?.lenientInt ?? 3600
        cached.withLock { $0 = (token, now + max(60, lifetime - 300)) }
        return token
    }
}
