import Core
import HTTP2Server

/// Checks an APNs provider token as Apple does: an ES256 JWT whose `kid` is the edge's key id, whose
/// `iss` is its team, signed by that key, issued no more than an hour ago and not in the future.
/// Verified signatures are remembered (a provider sends the same token for up to an hour), so a
/// token costs one ECDSA verification, not one per push.
final class ProviderTokenCheck: Sendable {
    /// Apple refuses tokens older than an hour (ExpiredProviderToken)…
    static let maximumAge: Int64 = 3600
    /// …and tokens from the future beyond clock skew (InvalidProviderToken).
    static let allowedSkew: Int64 = 300

    let key: KeyPair
    let teamID: String
    let keyID: String
    /// Token → its `iat`, for tokens whose signature verified.
    private let verified = Lock<[String: Int64]>([:])

    init(key: KeyPair, teamID: String, keyID: String) {
        self.key = key
        self.teamID = teamID
        self.keyID = keyID
    }

    /// Nil when `authorization` (the header's value) carries a valid token at `now` (unix seconds),
    /// else Apple's reason: MissingProviderToken, InvalidProviderToken or ExpiredProviderToken.
    func refusal(authorization: String?, now: Int64) -> String? {
        guard let authorization, !authorization.isEmpty else { return "MissingProviderToken" }
        guard authorization.utf8.count > 7, authorization.prefix(7).lowercased() == "bearer " else { return "InvalidProviderToken" }
        let token = String(authorization.dropFirst(7))
        let issued: Int64
        if let known = verified.withLock({ $0[token] }) {
            issued = known
        } else {
            guard let jws = CompactJWS(token), jws.header["alg"] == "ES256", jws.header["kid"] == .string(keyID),
                jws.claims["iss"] == .string(teamID), let iat = jws.time("iat"),
                key.verifies(jws.signature, of: jws.signingInput, algorithm: .es256)
            else { return "InvalidProviderToken" }
            issued = iat
            verified.withLock { known in
                if known.count >= 10_000 { known.removeAll() }
                known[token] = iat
            }
        }
        if issued > now + Self.allowedSkew { return "InvalidProviderToken" }
        if now - issued > Self.maximumAge { return "ExpiredProviderToken" }
        return nil
    }
}
