import Foundation
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
    private let cache = AccessTokenCache()

    public init(account: ServiceAccount, client: any HTTP2Transport, clock: any Clock) throws(DeliveryError) {
        self.account = account
        self.key = try SigningKey(pem: account.privateKey)
        self.client = client
        self.clock = clock
    }

    /// A valid access token; `replacing` forces a new one when that token was refused.
    public func token(replacing refused: String? = nil) throws(DeliveryError) -> String {
        let now = clock.now()
        return try cache.token(now: now, replacing: refused) { () throws(DeliveryError) in
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
            return try AccessTokenCache.exchange(
                url: account.tokenURI, form: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)",
                client: client, what: "service account")
        }
    }
}
