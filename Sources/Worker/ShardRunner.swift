import Foundation
import Core
import Delivery

/// Processes one shard: claims its lease, pages through its devices, applies the frequency caps,
/// builds payloads, hands each batch to the app's provider, and records every outcome. One batch is
/// on the network while the next is prepared, so a crash loses the records of at most two batches;
/// those devices are sent again when the shard is leased anew (bounded by 2 × `batchSize`, and
/// reported by the `attempts` count).
struct ShardRunner: Sendable {
    let store: any CampaignStore
    let providers: [String: any PushProvider]
    let throttle: ThrottleSettings
    let clock: any Clock
    let logger: Logger
    let workerID: String
    let batchSize: Int
    let leaseSeconds: Int64
    let stats: DeliveryStats

    /// Runs the shard until it is finished, the lease is lost, the message is deleted, or
    /// `shouldStop` turns true (then the lease is handed back after the current batch).
    func run(shard: Int64, shouldStop: () -> Bool) {
        do {
            guard let work = try store.claimShard(shard, worker: workerID, leaseUntil: clock.now() + leaseSeconds) else {
                logger.debug("shard no longer ours", ["shard.id": String(shard)])
                return
            }
            if work.attempts > 1 {
                logger.warning("shard leased again after a lost lease; up to two batches may be sent twice",
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
        // One batch is on the network while the next is read and prepared and the previous recorded.
        var inFlight: InFlightBatch?
        func record(_ batch: InFlightBatch, finished: Bool) throws -> Bool {
            let outcomes = batch.wait()
            return try store.record(outcomes, work: work, worker: workerID, leaseUntil: clock.now() + leaseSeconds,
                                    finished: finished, now: batch.now)
        }
        while true {
            if shouldStop() {
                if let inFlight { _ = try record(inFlight, finished: false) }
                try store.releaseLease(shard: work.shardID, worker: workerID)
                logger.info("shard handed back while stopping", ["shard.id": String(work.shardID), "message.code": work.messageCode])
                return
            }
            let page = try store.targets(of: work, after: after, limit: pageSize)
            let lastPage = page.count < pageSize
            after = page.last?.deviceID ?? after
            let now = clock.now()
            let (throttled, pushes) = try prepare(page, work: work, now: now)
            let batch = InFlightBatch(throttled: throttled, pushes: pushes, now: now, work: work, provider: provider, stats: stats)
            sentSoFar += page.count
            if let previous = inFlight, try !record(previous, finished: false) {
                _ = try record(batch, finished: false)
                logger.info("shard stopped: lease lost or message deleted", ["shard.id": String(work.shardID), "message.code": work.messageCode])
                return
            }
            inFlight = batch
            if lastPage {
                _ = try record(batch, finished: true)
                break
            }
            if let rate = work.spec.sendRate {
                let due = started + Double(sentSoFar) / Double(rate)
                let wait = due - monotonicSeconds()
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            }
        }
        logger.debug("shard done", ["shard.id": String(work.shardID), "message.code": work.messageCode])
    }

    /// Applies the frequency caps and builds the payloads of one page: the throttled outcomes, and
    /// the pushes to deliver.
    private func prepare(_ page: [Target], work: ShardWork, now: Int64) throws -> ([DeliveryRecord], [OutgoingPush]) {
        guard !page.isEmpty else { return ([], []) }
        let cappingWindow = work.spec.cappingDays.map { Int64($0) * 86_400 } ?? 0
        let recent = try store.recentSends(deviceIDs: page.map(\.deviceID), since1: now - Int64(throttle.perDeviceWindowSeconds),
                                           since2: now - cappingWindow)
        var outcomes: [DeliveryRecord] = []
        var pushes: [OutgoingPush] = []
        var apnsBodies: [APNsPayloadKey: [UInt8]] = [:]
        for target in page {
            let (inWindow, inCapping) = recent[target.deviceID] ?? (0, 0)
            if inWindow >= throttle.perDeviceCount || (work.spec.cappingCount.map { inCapping >= $0 } ?? false) {
                outcomes.append(DeliveryRecord(deviceID: target.deviceID, outcome: .throttled))
                continue
            }
            if Platform.usesAPNs(target.platform) {
                // Devices with the same language and badge share one encoded APNs payload.
                let key = APNsPayloadKey(language: target.language, badge: target.badge)
                let body = apnsBodies[key] ?? PayloadBuilder.apns(work.spec, hash: work.hash, language: target.language,
                                                                 badge: target.badge).encoded()
                apnsBodies[key] = body
                pushes.append(OutgoingPush(target: target, channel: .apns, body: body))
            } else {
                pushes.append(OutgoingPush(target: target, channel: .fcm, body: PayloadBuilder.fcm(
                    work.spec, hash: work.hash, token: target.pushToken, language: target.language, badge: target.badge).encoded()))
            }
        }
        return (outcomes, pushes)
    }
}

/// A batch being delivered on its own thread while the runner prepares the next one.
/// `@unchecked Sendable` invariant: `outcomes` is written by the delivering thread before `done`
/// is signalled and read by the runner only after waiting on it.
final class InFlightBatch: @unchecked Sendable {
    let now: Int64
    private let throttled: [DeliveryRecord]
    private var outcomes: [DeliveryRecord] = []
    private let done = DispatchSemaphore(value: 0)

    init(throttled: [DeliveryRecord], pushes: [OutgoingPush], now: Int64, work: ShardWork, provider: (any PushProvider)?,
         stats: DeliveryStats) {
        self.now = now
        self.throttled = throttled
        for _ in throttled { stats.count(provider: "none", outcome: "throttled") }
        guard !pushes.isEmpty else {
            done.signal()
            return
        }
        guard let provider else {
            outcomes = pushes.map { DeliveryRecord(deviceID: $0.target.deviceID, outcome: .failed, reason: "NoProviderConfigured") }
            done.signal()
            return
        }
        let thread = Thread { [self] in
            outcomes = provider.deliver(pushes, message: work)
            for (push, outcome) in zip(pushes, outcomes) {
                stats.count(provider: provider.name(for: push.channel), outcome: outcome.outcome.rawValue)
            }
            done.signal()
        }
        thread.name = "herald-deliver"
        thread.start()
    }

    /// Waits for the delivery and returns every outcome of the batch.
    func wait() -> [DeliveryRecord] {
        done.wait()
        done.signal()
        return throttled + outcomes
    }
}

/// What makes two devices' APNs payloads differ.
struct APNsPayloadKey: Hashable {
    let language: String?
    let badge: Int64
}
