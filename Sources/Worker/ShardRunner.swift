import Foundation
import Synchronization
import Core
import Delivery
import WebPush

/// Processes one shard while holding its lease (a `LeaseKeeper` extends it):
/// 1. devices an earlier holder handed to a provider without recording an outcome become ambiguous
///    retries (sent again once);
/// 2. first attempts: pages through the devices without an outcome, applies the frequency caps,
///    builds payloads and hands each batch to the app's provider, as many batches on the network as
///    fill its window while the next is prepared, each page marked attempted in the commit that
///    records an earlier batch;
/// 3. retries: sends the shard's due retries, and waits in place for the next ones when they are
///    due within a few seconds;
/// 4. hands the shard back: done, or pending until its next retry (or until a provider's circuit
///    breaker lets sending resume).
/// Before a batch goes out, the shard notes the highest device id handed over, so that a worker
/// that dies mid-batch leaves ambiguous only what it had on the network.
struct ShardRunner: Sendable {
    let store: any ShardStore & RetryStore
    let providers: [String: any PushProvider]
    let throttle: ThrottleSettings
    let retryPolicy: RetryPolicy
    let clock: any Clock
    let logger: Logger
    let workerID: String
    let batchSize: Int
    let leaseSeconds: Int64
    let stats: DeliveryStats
    /// Each application's window, in batches, shared by the shards the worker runs at once.
    let windows: [String: BatchSlots]

    /// Pushes sent to find out whether a provider whose breaker was open is back.
    static let probeSize = 20
    /// A wait this short (a breaker, the next retry) happens in place; a longer one hands the shard back.
    static let maxWaitInPlace = 5.0

    /// How a pass over the shard ended.
    enum PassEnd: Equatable {
        case complete
        /// A breaker is open for long: come back at this time.
        case resume(at: Int64)
        /// The worker is stopping, the lease was lost or the message deleted.
        case stopped
    }

    /// Runs the shard until it is finished or handed back, the lease is lost, the message is deleted,
    /// or `shouldStop` turns true (then the lease is handed back after the current batch).
    func run(shard: Int64, shouldStop: () -> Bool) {
        do {
            guard let work = try store.claimShard(shard, worker: workerID, leaseUntil: clock.now() + leaseSeconds, now: clock.now()) else {
                logger.debug("shard no longer ours", ["shard.id": String(shard)])
                return
            }
            if work.attempts > 1 {
                logger.info("shard leased again", ["shard.id": String(shard), "message.code": work.messageCode,
                                                   "shard.attempts": String(work.attempts)])
            }
            let keeper = LeaseKeeper(store: store, shard: shard, worker: workerID, leaseSeconds: leaseSeconds, clock: clock, logger: logger)
            defer { keeper.stop() }
            try process(work) { shouldStop() || keeper.isLost }
            if shouldStop(), !keeper.isLost {
                try store.releaseLease(shard: shard, worker: workerID)
                logger.info("shard handed back while stopping", ["shard.id": String(shard), "message.code": work.messageCode])
            }
        } catch {
            logger.error("shard failed; its lease will expire and it will be retried", ["shard.id": String(shard), "error": "\(error)"])
        }
    }

    private func process(_ work: ShardWork, stop: () -> Bool) throws {
        let provider = providers[work.app]
        if let through = work.attemptedThrough { try recoverUnrecorded(work, through: through) }
        var end = try sendFirstAttempts(work, provider: provider, stop: stop)
        var resumeAt: Int64?
        while end != .stopped {
            if case .resume(let at) = end { resumeAt = min(resumeAt ?? at, at) }
            end = try sendRetries(work, provider: provider, stop: stop)
            if end == .stopped { return }
            if case .resume(let at) = end { resumeAt = min(resumeAt ?? at, at) }
            // The next retries are waited for in place when they are due soon.
            guard resumeAt == nil, let next = try store.nextRetry(of: work) else { break }
            let wait = Double(next - clock.now())
            guard wait <= Self.maxWaitInPlace else { break }
            if !pause(wait, stop: stop) { return }
        }
        if end == .stopped { return }
        if let due = try store.finishShard(work, worker: workerID, resumeAt: resumeAt) {
            logger.info("shard waits for retries", ["shard.id": String(work.shardID), "message.code": work.messageCode,
                                                    "shard.due_in": String(due - clock.now())])
        } else {
            logger.debug("shard done", ["shard.id": String(work.shardID), "message.code": work.messageCode])
        }
    }

    /// Devices up to `through` that an earlier holder handed to a provider but recorded no outcome
    /// for: the provider may have accepted them, so each is sent again once, counted as ambiguous.
    private func recoverUnrecorded(_ work: ShardWork, through: Int64) throws {
        var range = work
        range.lastDevice = min(work.lastDevice, through)
        var after = work.firstDevice - 1
        var recovered = 0
        let now = clock.now()
        while true {
            let page = try store.targets(of: range, after: after, limit: batchSize)
            guard let last = page.last else { break }
            after = last.deviceID
            let outcomes = page.map { target in
                let channel = OutgoingPush.Channel(platform: target.platform)
                return DeliveryRecord(deviceID: target.deviceID, outcome: .retrying, reason: "WorkerLost", ambiguous: true,
                                      schedule: RetrySchedule(nextAt: now, expiresAt: now + retryPolicy.ttl(of: channel, work.spec)))
            }
            guard try store.record(outcomes, work: work, worker: workerID, leaseUntil: now + leaseSeconds, now: now,
                                   attemptedThrough: nil) else { return }
            recovered += page.count
        }
        if recovered > 0 {
            logger.warning("devices sent by a worker that vanished before recording them are sent once more",
                           ["shard.id": String(work.shardID), "message.code": work.messageCode, "devices": String(recovered)])
        }
    }

    // MARK: - First attempts

    private func sendFirstAttempts(_ work: ShardWork, provider: (any PushProvider)?, stop: () -> Bool) throws -> PassEnd {
        let started = monotonicSeconds()
        var after = work.firstDevice - 1
        var sentSoFar = 0
        let pageSize = work.spec.sendRate.map { max(1, min(batchSize, $0 / 4)) } ?? batchSize
        // Batches are on the network, as many as the app's window has slots (`BatchSlots`, shared
        // with the other shard this worker runs). Each turn takes the slots of every batch that is
        // back (whichever came back, not only the oldest), else a free slot, else waits for the
        // first of the two to turn up; it fills them with the pages read by then. One commit
        // records the batches that are back and marks the pages attempted; then the pages go out.
        // So batches leave as earlier ones come back, spread over the provider's latency rather
        // than sent and answered all at once; a slow answer holds only its own slot; a commit
        // costs one turn however many batches came back meanwhile (a fast provider's answers are
        // recorded many batches per commit, a slow one's batch by batch); and the unrecorded
        // pushes never exceed the window. The pages are read and prepared on a thread of their
        // own meanwhile (`PageReader`), unless a send rate paces them: then each is read when its
        // turn comes, one per turn.
        let slots = window(of: work.app)
        var inFlight: [InFlightBatch] = []
        // Slots this shard holds: one per batch sent and not yet recorded, and those taken for the
        // pages of the turn in progress. All go back when the pass ends, however it ends; when it
        // ends with an error, only once the batches still out are back, so that the other shard
        // never has more than the window on the network.
        var held = 0
        var back: [InFlightBatch] = []
        // A page read but not sent in its turn (no slot, or a breaker to ask first): the next
        // turn starts with it.
        var carried: PreparedPage?
        // Signalled once by each batch as it comes back, and by the window when a slot is given back
        // while this shard waits for one; so a wait on it can end with nothing new, and is checked.
        let returned = DispatchSemaphore(value: 0)
        /// Takes the batches that are back out of `inFlight`, oldest first.
        func takeReturned() -> [InFlightBatch] {
            var taken: [InFlightBatch] = []
            var out: [InFlightBatch] = []
            for batch in inFlight {
                if batch.isFinished { taken.append(batch) } else { out.append(batch) }
            }
            inFlight = out
            return taken
        }
        func release(_ count: Int) {
            slots.give(count)
            held -= count
        }
        defer {
            for batch in inFlight { _ = batch.wait() }
            for batch in back { _ = batch.wait() }
            slots.give(held)
        }
        let reader = work.spec.sendRate != nil ? nil : PageReader(after: after, limit: pageSize, depth: slots.capacity) { [self] after in
            let now = clock.now()
            return Result { try read(work, after: after, limit: pageSize, now: now) }
        }
        defer { reader?.stop() }
        func settle() throws -> Bool {
            guard !inFlight.isEmpty else { return true }
            let recorded = try record(inFlight, work: work, provider: provider, attemptedThrough: nil)
            release(inFlight.count)
            inFlight.removeAll()
            return recorded
        }
        while true {
            if stop() {
                _ = try settle()
                return .stopped
            }
            var next = try carried ?? reader?.next() ?? read(work, after: after, limit: pageSize, now: clock.now())
            carried = nil
            guard !next.page.isEmpty else { break }
            let fetched = next.page.count
            switch gate(for: next.page, provider: provider) {
            case .closed:
                break
            case .probe:
                guard try settle() else { return .stopped }
                next = prepare(Array(next.page.prefix(Self.probeSize)), recentSends: next.recentSends, work: work)
            case .open(let seconds):
                guard try settle() else { return .stopped }
                if seconds > Self.maxWaitInPlace { return .resume(at: clock.now() + Int64(seconds.rounded(.up))) }
                if !pause(seconds, stop: stop) { return .stopped }
                // The page waited unsent: it is read again, with what the caps know by now.
                reader?.restart(after: after)
                continue
            }
            while true {
                back = takeReturned()
                if !back.isEmpty { break }
                if slots.takeOne(orWake: returned) {
                    held += 1
                    break
                }
                if stop() {
                    slots.stopWaking(returned)
                    return .stopped
                }
                // A batch of this shard coming back, or a slot the other shard gives back, ends
                // the wait at once.
                _ = returned.wait(timeout: .now() + .milliseconds(100))
                slots.stopWaking(returned)
            }
            // A short page was the last one, unless a probe sent only part of it: then the reader
            // goes on after what the probe sent.
            var isLast = fetched < pageSize && next.page.count == fetched
            after = next.page[next.page.count - 1].deviceID
            if next.page.count < fetched { reader?.restart(after: after) }
            // The other slots of the turn carry the pages read by now, while their breakers are
            // closed; a free slot is taken for a page beyond those of the batches back.
            var pages = [next]
            var turnSlots = max(1, back.count)
            if let reader, next.page.count == fetched {
                while !isLast, let more = try reader.nextIfReady() {
                    guard !more.page.isEmpty, case .closed = gate(for: more.page, provider: provider) else {
                        carried = more
                        break
                    }
                    if pages.count == turnSlots {
                        guard slots.take(upTo: 1) == 1 else {
                            carried = more
                            break
                        }
                        held += 1
                        turnSlots += 1
                    }
                    pages.append(more)
                    isLast = more.page.count < pageSize
                    after = more.page[more.page.count - 1].deviceID
                }
            }
            // The slots of batches back beyond the pages go back once those batches are recorded.
            let spare = turnSlots - pages.count
            let marked = try back.isEmpty
                ? store.markAttempted(work, through: after, worker: workerID)
                : record(back, work: work, provider: provider, attemptedThrough: after)
            back = []
            release(spare)
            guard marked else {
                release(pages.count)
                _ = try settle()
                logger.info("shard stopped: lease lost or message deleted", ["shard.id": String(work.shardID), "message.code": work.messageCode])
                return .stopped
            }
            for page in pages {
                // Stamped when it goes out: the page may have been read turns earlier.
                inFlight.append(InFlightBatch(page, sentAt: clock.now(), work: work, provider: provider, whenBack: { returned.signal() }) {
                    [self] targets, now in pushes(for: targets, work: work, now: now)
                })
                sentSoFar += page.page.count
            }
            if isLast { break }
            if let rate = work.spec.sendRate {
                let wait = started + Double(sentSoFar) / Double(rate) - monotonicSeconds()
                if wait > 0 { Thread.sleep(forTimeInterval: wait) }
            }
        }
        // The last batches are recorded as they come back, those back together in one commit, and
        // their slots given back at once, so that the other shard fills the window while this one
        // waits for its last answers. Batches taken are back already; if recording them throws,
        // their slots are still held and go back with the others.
        while !inFlight.isEmpty {
            let batches = takeReturned()
            guard !batches.isEmpty else {
                returned.wait()
                continue
            }
            let recorded = try record(batches, work: work, provider: provider, attemptedThrough: nil)
            release(batches.count)
            guard recorded else {
                _ = try settle()
                return .stopped
            }
        }
        return .complete
    }

    /// Batches of `batchSize` a worker keeps unrecorded for a provider whose network `window` is
    /// given: as many as cover the window (a part of a batch counts as one), plus two that wait in
    /// the transport for a stream, so that a stream freed by an answer takes the next push at once
    /// rather than after its batch is recorded and the next one sent; `maxUnrecorded` pushes at
    /// most (`delivery.max_in_flight`), and two batches at least (one sent while the other is
    /// recorded).
    static func batchesInFlight(window: Int, batchSize: Int, maxUnrecorded: Int) -> Int {
        let size = max(1, batchSize)
        let covering = (max(0, window) + size - 1) / size
        return max(2, min(maxUnrecorded, (covering + 2) * size) / size)
    }

    /// The window `app`'s shards share; an app without a provider gets two slots of its own, since
    /// its pushes fail at once without reaching the network.
    private func window(of app: String) -> BatchSlots {
        windows[app] ?? BatchSlots(capacity: 2)
    }

    /// One window per application, for the shards of one worker to share.
    static func windows(for providers: [String: any PushProvider], batchSize: Int, maxUnrecorded: Int) -> [String: BatchSlots] {
        providers.mapValues { BatchSlots(capacity: batchesInFlight(window: $0.window, batchSize: batchSize, maxUnrecorded: maxUnrecorded)) }
    }

    /// Reads the page after `after` with what the frequency caps need to know, and applies them.
    /// The update or end of a running Live Activity is not capped: it changes what the activity
    /// already shows, so a capped one would leave the activity stale, or on the lock screen after it
    /// ended, without anyone noticing (APNs budgets such pushes per activity itself).
    private func read(_ work: ShardWork, after: Int64, limit: Int, now: Int64) throws -> PreparedPage {
        if let activity = work.spec.liveActivity, activity.event != .start {
            return prepare(try store.targets(of: work, after: after, limit: limit), recentSends: nil, work: work)
        }
        let cappingWindow = work.spec.cappingDays.map { Int64($0) * 86_400 } ?? 0
        let page = try store.cappedTargets(of: work, after: after, limit: limit, since1: now - Int64(throttle.perDeviceWindowSeconds),
                                           since2: now - cappingWindow)
        return prepare(page.targets, recentSends: page.recentSends, work: work)
    }

    /// Waits for `batches`, schedules their transient failures, tells the breakers (batch by batch),
    /// counts, and records them in one commit (noting `attemptedThrough` in it).
    private func record(_ batches: [InFlightBatch], work: ShardWork, provider: (any PushProvider)?, attemptedThrough: Int64?) throws -> Bool {
        var outcomes: [DeliveryRecord] = []
        for batch in batches {
            let (throttled, delivered) = batch.wait()
            let resolved = resolve(delivered, provider: provider, now: batch.now) { push in
                (attempts: 1, ambiguousBefore: 0, expiresAt: batch.now + retryPolicy.ttl(of: push.channel, work.spec))
            }
            if !throttled.isEmpty {
                stats.count([DeliveryStats.Key(provider: "none", detail: DeliveryRecord.Outcome.throttled.rawValue): throttled.count])
            }
            outcomes += throttled + resolved
        }
        return try store.record(outcomes, work: work, worker: workerID, leaseUntil: clock.now() + leaseSeconds, now: clock.now(),
                                attemptedThrough: attemptedThrough)
    }

    // MARK: - Retries

    private func sendRetries(_ work: ShardWork, provider: (any PushProvider)?, stop: () -> Bool) throws -> PassEnd {
        // Each batch of retries takes one of the app's slots while it is out, as a first-attempt
        // batch does.
        let slots = window(of: work.app)
        while !stop() {
            let now = clock.now()
            let due = try store.dueRetries(of: work, now: now, limit: batchSize)
            guard !due.isEmpty else { return .complete }
            var failures: [DeliveryRecord] = []
            var sendable: [PendingRetry] = []
            for retry in due {
                if retry.target == nil {
                    failures.append(DeliveryRecord(deviceID: retry.deviceID, outcome: .failed, reason: "NoLongerDeliverable"))
                } else if retry.expiresAt <= now || retry.ambiguous > 1 {
                    failures.append(DeliveryRecord(deviceID: retry.deviceID, outcome: .failed, reason: retry.reason))
                } else {
                    sendable.append(retry)
                }
            }
            switch gate(for: sendable.compactMap(\.target), provider: provider) {
            case .closed:
                break
            case .probe:
                sendable = Array(sendable.prefix(Self.probeSize))
            case .open(let seconds):
                if !failures.isEmpty {
                    guard try store.recordRetries(failures, work: work, worker: workerID, leaseUntil: now + leaseSeconds, now: now) else {
                        return .stopped
                    }
                }
                if seconds > Self.maxWaitInPlace { return .resume(at: now + Int64(seconds.rounded(.up))) }
                if !pause(seconds, stop: stop) { return .stopped }
                continue
            }
            while !slots.takeOne(waitingUpTo: 0.1) {
                if stop() { return .stopped }
            }
            defer { slots.give(1) }
            guard try store.claimRetries(sendable.map(\.deviceID), work: work, worker: workerID) else { return .stopped }
            let pushes = self.pushes(for: sendable.compactMap(\.target), work: work, now: now)
            let outcomes = provider?.deliver(pushes, message: work)
                ?? pushes.map { DeliveryRecord(deviceID: $0.target.deviceID, outcome: .failed, reason: "NoProviderConfigured") }
            let byDevice = Dictionary(sendable.map { ($0.deviceID, $0) }, uniquingKeysWith: { first, _ in first })
            let resolved = resolve(Array(zip(pushes, outcomes)), provider: provider, now: clock.now()) { push in
                let retry = byDevice[push.target.deviceID]!
                return (attempts: retry.attempts + 1, ambiguousBefore: retry.ambiguous, expiresAt: retry.expiresAt)
            }
            guard try store.recordRetries(failures + resolved, work: work, worker: workerID, leaseUntil: clock.now() + leaseSeconds,
                                          now: clock.now()) else { return .stopped }
        }
        return .stopped
    }

    // MARK: - Shared

    /// The most restrictive breaker gate among the channels `targets` need.
    private func gate(for targets: [Target], provider: (any PushProvider)?) -> CircuitBreaker.Gate {
        guard let provider else { return .closed }
        var channels: Set<OutgoingPush.Channel> = []
        for target in targets { channels.insert(OutgoingPush.Channel(platform: target.platform)) }
        var result = CircuitBreaker.Gate.closed
        let now = monotonicSeconds()
        for channel in channels {
            switch provider.breaker(for: channel)?.gate(now: now) ?? .closed {
            case .closed: break
            case .probe: if result == .closed { result = .probe }
            case .open(let seconds):
                if case .open(let longest) = result, longest >= seconds { break }
                result = .open(seconds: seconds)
            }
        }
        return result
    }

    /// Turns provider outcomes into what is recorded: transient failures get their retry schedule
    /// (or fail when out of time), every outcome is counted, and each channel's breaker learns how
    /// the batch went. `history` gives a push's attempt number, earlier unknown outcomes and expiry.
    private func resolve(_ delivered: [(OutgoingPush, DeliveryRecord)], provider: (any PushProvider)?, now: Int64,
                        history: (OutgoingPush) -> (attempts: Int, ambiguousBefore: Int, expiresAt: Int64)) -> [DeliveryRecord] {
        var perChannel: [OutgoingPush.Channel: (total: Int, transient: Int, reasons: [String: Int], retryAfter: Double?)] = [:]
        // Counted once per provider and outcome, after the batch: one lock instead of one per push.
        var counts: [DeliveryStats.Key: Int] = [:]
        let resolved = delivered.map { push, outcome in
            let name = provider?.name(for: push.channel) ?? "none"
            var tally = perChannel[push.channel] ?? (0, 0, [:], nil)
            tally.total += 1
            if outcome.outcome == .retrying {
                tally.transient += 1
                tally.reasons[outcome.reason ?? "Unknown", default: 0] += 1
                if let after = outcome.retryAfter { tally.retryAfter = max(tally.retryAfter ?? 0, after) }
                stats.countRetry(provider: name, reason: outcome.reason ?? "Unknown", ambiguous: outcome.ambiguous)
            }
            perChannel[push.channel] = tally
            let (attempts, ambiguousBefore, expiresAt) = history(push)
            let final = retryPolicy.resolve(outcome, attempts: attempts, ambiguousBefore: ambiguousBefore, expiresAt: expiresAt, now: now,
                                            jitter: Double.random(in: 0...1))
            counts[DeliveryStats.Key(provider: name, detail: final.outcome.rawValue), default: 0] += 1
            return final
        }
        stats.count(counts)
        for (channel, tally) in perChannel {
            guard let breaker = provider?.breaker(for: channel) else { continue }
            let reason = tally.reasons.max { $0.value < $1.value }?.key
            let changed = breaker.observe(total: tally.total, transient: tally.transient, reason: reason, retryAfter: tally.retryAfter,
                                          now: monotonicSeconds(), jitter: Double.random(in: 0...1))
            if changed, case .open(let seconds) = breaker.gate(now: monotonicSeconds()) {
                logger.error("provider failing; sending paused", ["provider": breaker.provider, "app": breaker.app,
                                                                 "reason": reason ?? "Unknown", "pause_seconds": String(format: "%.1f", seconds)])
            } else if changed {
                logger.info("provider answering again; sending resumed", ["provider": breaker.provider, "app": breaker.app])
            }
        }
        return resolved
    }

    /// Waits `seconds`, checking `stop` every 100 ms; false when told to stop.
    private func pause(_ seconds: Double, stop: () -> Bool) -> Bool {
        let until = monotonicSeconds() + seconds
        while monotonicSeconds() < until {
            if stop() { return false }
            Thread.sleep(forTimeInterval: min(0.1, max(0, until - monotonicSeconds())))
        }
        return !stop()
    }

    /// Applies the frequency caps to one page, given its devices' pushes sent within the caps'
    /// windows (`cappedTargets`; nil when the page is not capped): the throttled outcomes, and the
    /// targets to deliver to (their payloads are built on the batch's own thread).
    private func prepare(_ page: [Target], recentSends recent: [Int64: (Int, Int)]?, work: ShardWork) -> PreparedPage {
        guard let recent else {
            return PreparedPage(page: page, recentSends: nil, throttled: [], allowed: page)
        }
        var throttled: [DeliveryRecord] = []
        var allowed: [Target] = []
        for target in page {
            let (inWindow, inCapping) = recent[target.deviceID] ?? (0, 0)
            if inWindow >= throttle.perDeviceCount || (work.spec.cappingCount.map { inCapping >= $0 } ?? false) {
                throttled.append(DeliveryRecord(deviceID: target.deviceID, outcome: .throttled))
            } else {
                allowed.append(target)
            }
        }
        return PreparedPage(page: page, recentSends: recent, throttled: throttled, allowed: allowed)
    }

    /// The payloads of `targets` sent at `now`: devices with the same language and badge share one
    /// encoded APNs payload, browsers with the same language one Web Push payload (encrypted per
    /// browser as it is sent).
    private func pushes(for targets: [Target], work: ShardWork, now: Int64) -> [OutgoingPush] {
        let inbox = PayloadBuilder.InboxLink(work.spec, code: work.messageCode, sentAt: now)
        var apnsBodies: [APNsPayloadKey: [UInt8]] = [:]
        var fcmBodies: [String?: PayloadBuilder.FCMBodies] = [:]
        var webBodies: [String?: [UInt8]] = [:]
        return targets.map { target in
            switch OutgoingPush.Channel(platform: target.platform) {
            case .apns:
                let key = APNsPayloadKey(language: target.language, badge: target.badge)
                let body = apnsBodies[key] ?? PayloadBuilder.apns(work.spec, hash: work.hash, language: target.language,
                                                                 badge: target.badge, inbox: inbox).encoded()
                apnsBodies[key] = body
                return OutgoingPush(target: target, channel: .apns, body: body)
            case .fcm:
                let bodies = fcmBodies[target.language] ?? PayloadBuilder.FCMBodies(work.spec, hash: work.hash, language: target.language,
                                                                                    inbox: inbox)
                fcmBodies[target.language] = bodies
                return OutgoingPush(target: target, channel: .fcm, body: bodies.body(token: target.pushToken))
            case .huawei:
                return OutgoingPush(target: target, channel: .huawei, body: PayloadBuilder.huawei(
                    work.spec, hash: work.hash, token: target.pushToken, language: target.language, inbox: inbox).encoded())
            case .web:
                // A browser without stored keys (or with keys that no longer parse) gets no
                // subscription: the provider fails its push as `NoSubscriptionKeys`.
                let subscription = target.webKeys.flatMap { keys in
                    try? WebSubscription(endpoint: target.pushToken, p256dh: keys.p256dh, auth: keys.auth)
                }
                let body = webBodies[target.language] ?? PayloadBuilder.web(work.spec, hash: work.hash, language: target.language,
                                                                           inbox: inbox).encoded()
                webBodies[target.language] = body
                return OutgoingPush(target: target, channel: .web, body: body, subscription: subscription)
            }
        }
    }
}

/// A page of a shard's first pass with the frequency caps applied: the throttled outcomes, and the
/// targets to deliver to.
struct PreparedPage: Sendable {
    let page: [Target]
    /// The caps' counts the page was prepared with (nil: not capped).
    let recentSends: [Int64: (Int, Int)]?
    let throttled: [DeliveryRecord]
    let allowed: [Target]

    /// What comes after the last page.
    static let empty = PreparedPage(page: [], recentSends: nil, throttled: [], allowed: [])
}

/// A value computed on a pool thread while the runner goes on: a batch's outcomes
/// (`InFlightBatch`).
/// `@unchecked Sendable` invariant: `value` is written before `ready` is set (by the pool thread,
/// or in `init(ready:)`) and read only after `ready` is seen set.
final class Background<Value: Sendable>: @unchecked Sendable {
    private var value: Value?
    /// Set with release ordering once `value` is written, so that a look at it costs no system call
    /// (the runner looks at every batch out on every turn).
    private let ready = Atomic<Bool>(false)
    /// Signalled once the value is there, for `wait`.
    private let done = DispatchSemaphore(value: 0)

    /// Computes the value on a thread of `pool`, then calls `whenDone`.
    init(on pool: ThreadPool, whenDone: @escaping @Sendable () -> Void, _ compute: @escaping @Sendable () -> Value) {
        pool.run { [self] in
            value = compute()
            ready.store(true, ordering: .releasing)
            done.signal()
            whenDone()
        }
    }

    /// A value known at once.
    init(ready value: Value) {
        self.value = value
        ready.store(true, ordering: .releasing)
    }

    func wait() -> Value {
        if !isReady {
            done.wait()
            done.signal()
        }
        return value!
    }

    /// Whether the value is there (`wait` would not block).
    var isReady: Bool { ready.load(ordering: .acquiring) }
}

/// A batch being built (`build` makes the payloads sent at `sentAt`) and delivered on a thread of
/// the deliveries' pool while the runner records the one before and takes the next page.
struct InFlightBatch: Sendable {
    let now: Int64
    private let throttled: [DeliveryRecord]
    private let delivered: Background<(pushes: [OutgoingPush], outcomes: [DeliveryRecord])>

    /// `whenBack` is called once, when the outcomes are there.
    init(_ prepared: PreparedPage, sentAt: Int64, work: ShardWork, provider: (any PushProvider)?, whenBack: @escaping @Sendable () -> Void,
         build: @escaping @Sendable (_ targets: [Target], _ sentAt: Int64) -> [OutgoingPush]) {
        now = sentAt
        throttled = prepared.throttled
        let targets = prepared.allowed
        if targets.isEmpty {
            delivered = Background(ready: ([], []))
            whenBack()
        } else if let provider {
            delivered = Background(on: .deliveries, whenDone: whenBack) {
                let pushes = build(targets, sentAt)
                return (pushes, provider.deliver(pushes, message: work))
            }
        } else {
            let pushes = build(targets, sentAt)
            delivered = Background(ready: (pushes, pushes.map {
                DeliveryRecord(deviceID: $0.target.deviceID, outcome: .failed, reason: "NoProviderConfigured")
            }))
            whenBack()
        }
    }

    /// Whether the delivery is over (`wait` would not block).
    var isFinished: Bool { delivered.isReady }

    /// Waits for the delivery: the throttled outcomes, and each push with its outcome.
    func wait() -> (throttled: [DeliveryRecord], delivered: [(OutgoingPush, DeliveryRecord)]) {
        let (pushes, outcomes) = delivered.wait()
        return (throttled, Array(zip(pushes, outcomes)))
    }
}

/// What makes two devices' APNs payloads differ.
struct APNsPayloadKey: Hashable {
    let language: String?
    let badge: Int64
}
