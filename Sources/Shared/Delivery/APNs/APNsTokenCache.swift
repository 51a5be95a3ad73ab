import Core

/// The APNs provider token (ES256 JWT) of one key, shared by every connection and request. Apple
/// wants a token refreshed between 20 and 60 minutes after issue (sooner gets
/// `TooManyProviderTokenUpdates`, later `ExpiredProviderToken`): it is rotated after 50 minutes, and
/// earlier only when APNs rejects it.
public final class APNsTokenCache: Sendable {
    public static let rotation: Int64 = 50 * 60

    private let teamID: String
    private let keyID: String
    private let key: SigningKey
    private let clock: any Clock
    private let current = Lock<(token: String, issuedAt: Int64)?>(nil)

    public init(teamID: String, keyID: String, key: SigningKey, clock: any Clock) {
        self.teamID = teamID
        self.keyID = keyID
        self.key = key
        self.clock = clock
    }

    /// The current token, made anew when there is none or it is older than `rotation`.
    public func token() throws(DeliveryError) -> String {
        let now = clock.now()
        return try current.withLock { (cached: inout (token: String, issuedAt: Int64)?) throws(DeliveryError) -> String in
            if let cached, now - cached.issuedAt < Self.rotation { return cached.token }
            let token = try make(now)
            cached = (token, now)
            return token
        }
    }

    /// Replaces `rejected` (APNs refused it) unless another caller already did; returns the token to use.
    public func replace(_ rejected: String) throws(DeliveryError) -> String {
        let now = clock.now()
        return try current.withLock { (cached: inout (token: String, issuedAt: Int64)?) throws(DeliveryError) -> String in
            if let cached, cached.token != rejected { return cached.token }
            let token = try make(now)
            cached = (token, now)
            return token
        }
    }

    /// When the current token was issued (tests check rotation with an injected clock).
    public var issuedAt: Int64? { current.withLock { $0?.issuedAt } }

    private func make(_ now: Int64) throws(DeliveryError) -> String {
        try JWT.sign(header: ["alg": "ES256", "kid": .string(keyID)], claims: ["iss": .string(teamID), "iat": .int(now)],
                     key: key, algorithm: .es256)
    }
}
