import Core

/// The access tokens an edge token endpoint has issued and when they expire; expired ones are
/// forgotten once there are more than 100,000.
final class IssuedTokens: Sendable {
    static let lifetime: Int64 = 3600

    private let expiries = Lock<[String: Int64]>([:])

    /// A new token (`prefix` and random text) valid for `lifetime` seconds from `now`.
    func issue(prefix: String, now: Int64) -> String {
        var random = SystemRandomNumberGenerator()
        let token = prefix + (0..<4).map { _ in String(random.next() as UInt64, radix: 36) }.joined()
        expiries.withLock { tokens in
            if tokens.count > 100_000 { tokens = tokens.filter { $0.value > now } }
            tokens[token] = now + Self.lifetime
        }
        return token
    }

    /// When `token` expires (unix seconds), or nil when it was never issued.
    func expiry(of token: String) -> Int64? { expiries.withLock { $0[token] } }
}
