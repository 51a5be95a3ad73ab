import Core
import HTTP2Server

/// Checks the RS256 assertion a service account sends to Google's OAuth token endpoint (the JWT
/// bearer grant) as Google does: signed by the service account's key, `iss` its `client_email`,
/// `aud` the token URI, a messaging scope, and `iat`/`exp` at most an hour apart around now.
struct AssertionCheck: Sendable {
    static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    static let scopes: Set<String> = ["https://www.googleapis.com/auth/firebase.messaging", "https://www.googleapis.com/auth/cloud-platform"]

    let key: KeyPair
    let clientEmail: String
    let tokenURI: String

    /// An OAuth error (`error`, `error_description`) as Google words it.
    struct Refusal: Error, Equatable {
        let error: String
        let description: String
    }

    /// Checks a token request's form body (`grant_type`, `assertion`) at `now` (unix seconds).
    func check(form: [String: String], now: Int64) throws(Refusal) {
        guard let grant = form["grant_type"], !grant.isEmpty else {
            throw Refusal(error: "invalid_request", description: "Missing required parameter: grant_type")
        }
        guard grant == Self.grantType else { throw Refusal(error: "unsupported_grant_type", description: "Invalid grant_type: \(grant)") }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            throw Refusal(error: "invalid_request", description: "Missing required parameter: assertion")
        }
        guard let jws = CompactJWS(assertion) else { throw Refusal(error: "invalid_grant", description: "Invalid JWT: Malformed token.") }
        guard jws.header["alg"] == "RS256", key.verifies(jws.signature, of: jws.signingInput, algorithm: .rs256) else {
            throw Refusal(error: "invalid_grant", description: "Invalid JWT Signature.")
        }
        guard jws.claims["iss"] == .string(clientEmail) else { throw Refusal(error: "invalid_grant", description: "Invalid email or User ID") }
        guard jws.claims["aud"] == .string(tokenURI) else {
            throw Refusal(error: "invalid_grant", description: "Invalid JWT: Failed audience check. The right audience is \(tokenURI)")
        }
        guard let iat = jws.time("iat"), let exp = jws.time("exp"), exp > iat, exp - iat <= 3600, exp >= now,
            iat <= now + ProviderTokenCheck.allowedSkew
        else {
            throw Refusal(error: "invalid_grant", description: "Invalid JWT: Token must be a short-lived token (60 minutes) and in a "
                + "reasonable timeframe. Check your iat and exp values in the JWT claim.")
        }
        guard let scope = jws.claims["scope"]?.stringValue, !scope.isEmpty else {
            throw Refusal(error: "invalid_scope", description: "Empty or missing scope not allowed.")
        }
        guard !Self.scopes.isDisjoint(with: scope.split(separator: " ").map(String.init)) else {
            throw Refusal(error: "invalid_scope", description: "The scope must include https://www.googleapis.com/auth/firebase.messaging")
        }
    }
}
