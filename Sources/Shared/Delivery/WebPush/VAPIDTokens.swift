import Core
import WebPush

/// The application server's identity toward push services (RFC 8292, VAPID): an ES256 JWT per
/// push-service origin (`aud`), with `sub` the contact address and `exp` `lifetime` seconds after
/// issue (push services refuse more than 24 hours). A token is reused for its origin until less
/// than half its lifetime is left, then signed anew.
public final class VAPIDTokens: Sendable {
    public static let lifetime: Int64 = 12 * 3600

    /// `k=`: the uncompressed public key in base64url, what a site passes as `applicationServerKey`.
    public let publicKey: String
    private let subject: String
    private let key: SigningKey
    private let clock: any Clock
    private let tokens = Lock<[String: (token: String, expiresAt: Int64)]>([:])

    /// `pem` is a P-256 private key; `subject` a `mailto:` or `https:` URI.
    public init(pem: String, subject: String, clock: any Clock) throws(DeliveryError) {
        do {
            publicKey = Base64URL.encode(try P256Key(pem: pem).publicKey)
        } catch {
            throw DeliveryError(message: "VAPID key: \(error)", errno: 0)
        }
        key = try SigningKey(pem: pem)
        self.subject = subject
        self.clock = clock
    }

    /// `Authorization` for a request to `origin` (`https://host[:port]`).
    public func authorization(origin: String) throws(DeliveryError) -> String {
        "vapid t=\(try token(origin: origin)), k=\(publicKey)"
    }

    /// The current token of `origin`, signed anew when there is none or half its lifetime is gone.
    func token(origin: String) throws(DeliveryError) -> String {
        let now = clock.now()
        return try tokens.withLock { (tokens: inout [String: (token: String, expiresAt: Int64)]) throws(DeliveryError) -> String in
            if let cached = tokens[origin], cached.expiresAt - now > Self.lifetime / 2 { return cached.token }
            let expiresAt = now + Self.lifetime
            let token = try JWT.sign(header: ["typ": "JWT", "alg": "ES256"],
                                     claims: ["aud": .string(origin), "exp": .int(expiresAt), "sub": .string(subject)],
                                     key: key, algorithm: .es256)
            tokens[origin] = (token, expiresAt)
            return token
        }
    }

    /// Forgets `origin`'s token when the push service refused the `authorization` that carried it
    /// (unless it was already replaced), so the next request carries a new one.
    func discard(authorization: String, origin: String) {
        tokens.withLock { tokens in
            if let cached = tokens[origin], authorization == "vapid t=\(cached.token), k=\(publicKey)" { tokens[origin] = nil }
        }
    }
}
