import Foundation
import Core

/// When a push that failed for a transient reason is tried again, and when it gives up.
///
/// The n-th retry waits 1 s × 2ⁿ⁻¹ up to 60 s, less a jitter of up to half, and never less than the
/// provider's `Retry-After`. A push expires `ios_ttl` (APNs), `android_gcm_ttl` (FCM, Huawei) or
/// `web_ttl` (Web Push) seconds after its first attempt, or `delivery.default_ttl_seconds` when the
/// message sets none; a retry that would fall after the expiry is not scheduled, and the push fails
/// with its last reason. A push whose
/// outcome was unknown (the connection was lost after the request was written) is sent again at most
/// once: a second unknown outcome fails it.
public struct RetryPolicy: Sendable {
    static let firstDelay = 1.0
    static let maxDelay = 60.0

    public var defaultTTL: Int64

    public init(defaultTTL: Int64) { self.defaultTTL = defaultTTL }

    /// Seconds the push may be retried for after its first attempt.
    public func ttl(of channel: OutgoingPush.Channel, _ spec: MessageSpec) -> Int64 {
        let ttl: Int64?
        switch channel {
        case .apns: ttl = spec.ios.ttl
        case .fcm, .huawei: ttl = spec.android.ttl
        case .web: ttl = spec.web?.ttl
        }
        return max(0, ttl ?? defaultTTL)
    }

    /// Seconds to wait after the `attempts`-th attempt failed (`jitter` in 0...1).
    func delay(attempts: Int, retryAfter: Double?, jitter: Double) -> Double {
        let backoff = min(Self.maxDelay, Self.firstDelay * Double(1 << min(max(attempts, 1) - 1, 16))) * (1 - jitter / 2)
        return max(backoff, retryAfter ?? 0)
    }

    /// What to record for `outcome`, the result of attempt number `attempts`: a `retrying` outcome
    /// gets its schedule, or becomes `failed` when it would come after `expiresAt` or is a second
    /// unknown outcome (`ambiguousBefore` counts the earlier ones). Other outcomes pass unchanged.
    /// `jitter` is drawn only for a retry (a random draw is a system call on Linux, once per push
    /// otherwise).
    public func resolve(_ outcome: DeliveryRecord, attempts: Int, ambiguousBefore: Int, expiresAt: Int64, now: Int64,
                        jitter: @autoclosure () -> Double) -> DeliveryRecord {
        guard outcome.outcome == .retrying else { return outcome }
        let nextAt = now + Int64(delay(attempts: attempts, retryAfter: outcome.retryAfter, jitter: jitter()).rounded(.up))
        if nextAt >= expiresAt || (outcome.ambiguous && ambiguousBefore > 0) {
            return DeliveryRecord(deviceID: outcome.deviceID, outcome: .failed, reason: outcome.reason)
        }
        var scheduled = outcome
        scheduled.schedule = RetrySchedule(nextAt: nextAt, expiresAt: expiresAt)
        return scheduled
    }
}
