import Foundation
import Shared

/// Processes one shard: claims its lease, pages through its devices, applies the frequency caps,
/// builds payloads, hands each batch to the app's provider, and records every outcome before the
/// next batch. A crash loses at most one batch of records; those devices are sent again when the
/// shard is leased anew (bounded by `batchSize`, and reported by the `attempts` count).
struct ShardRunner: Sendable {
    let store: any CampaignStore
    let providers: [String: any PushProvider]
    let throttle: ThrottleSettings
    let clock: any Clock
    let logger: Logger
    let workerID: String
    let batchSize: Int
    let leaseSeconds: Int64

    /// Runs the shard until it is finished, the lease is lost, the message is deleted, or
    /// `shouldStop` turns true (then the lease is handed back after the current batch).
    func run(shard: Int64, shouldStop: () -> Bool) {
        do {
            guard let work = try store.claimShard(shard, worker: workerID, leaseUntil: clock.now() + leaseSeconds) else {
                logger.debug("shard no longer ours", ["shard.id": String(shard)])
                return
            }
            if work.attempts > 1 {
                logger.warning("shard leased again after a lost lease; up to one batch may be sent twice",
                               ["shard.id": String(shard), "message.code": work.messageCode, "shard.attempts": String(work.attempts),
                                "batch.size": String(batchSize)])
            }
            try process(work, shouldStop: shouldStop)
        } catch {
            logger.error("shard failed; its lease will expire and it will be retried", ["shard.id": String(shard), "error": "\(error)"])
        }
    }

    private func process(_ work: ShardWork, shouldStop: () -> Bool) throws {
        let started = monotonicSeconds()
        var after = work.firstDevice - 1
        var sentSoFar = 0
        let pageSize = work.spec.sendRate.map { max(1, min(batchSize, $0 / 4)) } ?? batchSize
        let provider = providers[work.app]
        while true {
            if shouldStop() {
                try store.releaseLease(shard: work.shardID, worker: workerID)
                logger.info("shard handed back while stopping", ["shard.id": String(work.shardID), "message.code": work.messageCode])
                return
            }
            let page = try store.targets(of: work, after: after, limit: pageSize)
            let finished = page.count < pageSize
            after = page.last?.deviceID ?? after
            let now = clock.now()
            let outcomes = try deliver(page, work: work, provider: provider, now: now)
            sentSoFar += outcomes.count
            guard try store.record(outcomes, work: work, worker: workerID, leaseUntil: now + leaseSeconds, finished: finished, now: now)
            else {
                logger.info("shard stopped: lease lost or message deleted", ["shard.id": String(work.shardID), "message.code": work.messageCode])
                return
            }
            if finished { break }
            if let rate = work.spec.sendRate {
                let due = started + Double(sentSoFar) / Double(rate)
                let wait = due - monotonicSeconds()
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            }
        }
        logger.debug("shard done", ["shard.id": String(work.shardID), "message.code": work.messageCode])
    }

    /// Throttles, builds payloads and delivers one page; returns an outcome for every device.
    private func deliver(_ page: [Target], work: ShardWork, provider: (any PushProvider)?, now: Int64) throws -> [DeliveryRecord] {
        guard !page.isEmpty else { return [] }
        let cappingWindow = work.spec.cappingDays.map { Int64($0) * 86_400 } ?? 0
        let recent = try store.recentSends(deviceIDs: page.map(\.deviceID), since1: now - Int64(throttle.perDeviceWindowSeconds),
                                           since2: now - cappingWindow)
        var outcomes: [DeliveryRecord] = []
        var pushes: [OutgoingPush] = []
        for target in page {
            let (inWindow, inCapping) = recent[target.deviceID] ?? (0, 0)
            if inWindow >= throttle.perDeviceCount || (work.spec.cappingCount.map { inCapping >= $0 } ?? false) {
                outcomes.append(DeliveryRecord(deviceID: target.deviceID, outcome: .throttled))
                continue
            }
            if target.platform == 1 {
                pushes.append(OutgoingPush(target: target, channel: .apns, payload: PayloadBuilder.apns(
                    work.spec, hash: work.hash, language: target.language, badge: target.badge)))
            } else {
                pushes.append(OutgoingPush(target: target, channel: .fcm, payload: PayloadBuilder.fcm(
                    work.spec, hash: work.hash, token: target.pushToken, language: target.language, badge: target.badge)))
            }
        }
        if let provider {
            outcomes.append(contentsOf: provider.deliver(pushes, message: work))
        } else {
            outcomes.append(contentsOf: pushes.map { DeliveryRecord(deviceID: $0.target.deviceID, outcome: .failed, reason: "NoProviderConfigured") })
        }
        return outcomes
    }
}
