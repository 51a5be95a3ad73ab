import Foundation
import Testing
import Core
import Delivery
import Storage
import TestSupport
@testable import Worker

/// The shard runner over a real SQLite file, delivering to the app's file sink: what reaches the
/// sink and what the message's funnel says once the shard is run.
@Suite struct ShardRunnerTests {
    /// A database with one application whose pushes go to a sink file, and a runner for worker `w1`
    /// (three devices a batch, so that a shard takes several pages) on a clock that stands still.
    struct Rig {
        static let app = "APP-1"
        let folder: TemporaryDirectory
        let backend: any StoreBackend
        let clock = ManualClock(1_800_000_000)
        var sink: String { folder.file("sink.jsonl") }

        init() throws {
            folder = try TemporaryDirectory()
            var configuration = Configuration()
            configuration.database = DatabaseSettings(path: folder.file("herald.sqlite"))
            configuration.apps = [AppConfiguration(code: Self.app, name: "Shop", apiToken: "secret", sink: folder.file("sink.jsonl"))]
            backend = try Storage.open(configuration)
        }

        var campaigns: any CampaignStore { backend.campaigns }

        /// Runs with the app's sink as its provider, unless `withProvider` is false.
        func runner(throttle: ThrottleSettings = ThrottleSettings(), withProvider: Bool = true) throws -> ShardRunner {
            let providers: [String: any PushProvider] = withProvider ? [Self.app: try SinkProvider(path: sink)] : [:]
            return ShardRunner(store: campaigns, providers: providers, throttle: throttle, retryPolicy: RetryPolicy(defaultTTL: 3600),
                               clock: clock, logger: Logger(label: "test", level: .none), workerID: "w1", batchSize: 3, leaseSeconds: 30,
                               stats: DeliveryStats(), windows: ShardRunner.windows(for: providers, batchSize: 3, maxUnrecorded: DeliverySettings().maxInFlight))
        }

        /// Registers devices `d0`, `d1`, … (even ones iOS, odd ones Android), in that order.
        func register(_ count: Int) throws {
            for index in 0..<count {
                try backend.devices.registerDevice(
                    DeviceRegistration(app: Self.app, hwid: "d\(index)", pushToken: "token\(index)", gateway: nil,
                                       attributes: DeviceAttributes(platform: index % 2 == 0 ? Platform.iOS : Platform.android), tags: []),
                    now: clock.now())
            }
        }

        /// Creates a message to every device, due now, and returns its code and its one shard, leased to `worker`.
        func message(_ change: (inout MessageSpec) -> Void = { _ in }, leasedTo worker: String = "w1") throws -> (code: String, shard: Int64) {
            var spec = MessageSpec(content: ["default": "Sale"])
            spec.schedule = MessageSpec.Schedule(sendAt: clock.now(), perDeviceTimezone: false)
            change(&spec)
            let code = try #require(try campaigns.createMessages(app: Self.app, [NewMessage(spec: spec, transactionID: nil)], now: clock.now()).first)
            #expect(try campaigns.activateDueMessages(now: clock.now(), shardSize: 20_000) == 1)
            let shard = try #require(try campaigns.leaseShards(worker: worker, count: 1, now: clock.now(), leaseUntil: clock.now() + 30).first)
            return (code, shard)
        }

        /// The message's funnel as `GET /api/v1/messages/<code>` shows it, once finished shards are counted in.
        func funnel(_ code: String) throws -> MessageStatus {
            _ = try campaigns.completeMessages(now: clock.now())
            return try #require(try campaigns.messageStatus(app: Self.app, code: code))
        }

        /// The hwids the sink received pushes of `code` for, in order.
        func sent(_ code: String) throws -> [String] {
            try jsonLines(atPath: sink).filter { $0["message"]?.stringValue == code }.compactMap { $0["hwid"]?.stringValue }
        }
    }

    @Test func theUnrecordedBatchesFillTheWindowWithTwoWaitingCappedByMaxInFlight() {
        // APNs, two connections of 1,000 streams: eight batches on the network, two waiting.
        #expect(ShardRunner.batchesInFlight(window: 2_000, batchSize: 250, maxUnrecorded: 4_000) == 10)
        // `delivery.max_in_flight` lowered to the window: nothing waits beyond it.
        #expect(ShardRunner.batchesInFlight(window: 1_000, batchSize: 250, maxUnrecorded: 1_000) == 4)
        // FCM's 4 x 100 streams: one batch and a part on the network, two whole batches waiting
        // behind the part; 2 x 100 streams: one batch covers the window.
        #expect(ShardRunner.batchesInFlight(window: 400, batchSize: 250, maxUnrecorded: 4_000) == 4)
        #expect(ShardRunner.batchesInFlight(window: 200, batchSize: 250, maxUnrecorded: 4_000) == 3)
        // A provider that answers at once, or a cap below two batches: two batches.
        #expect(ShardRunner.batchesInFlight(window: 0, batchSize: 250, maxUnrecorded: 4_000) == 2)
        #expect(ShardRunner.batchesInFlight(window: 2_000, batchSize: 250, maxUnrecorded: 100) == 2)
    }

    @Test func everyDeviceGetsOnePushThroughItsChannelAndTheMessageIsDone() throws {
        let rig = try Rig()
        try rig.register(10)
        let (code, shard) = try rig.message()
        try rig.runner().run(shard: shard) { false }

        let lines = try jsonLines(atPath: rig.sink)
        #expect(try rig.sent(code).sorted() == (0..<10).map { "d\($0)" }.sorted())
        for line in lines {
            let index = Int(line["hwid"]?.stringValue?.dropFirst() ?? "") ?? -1
            #expect(line["platform"]?.stringValue == (index % 2 == 0 ? "apns" : "fcm") && line["token"]?.stringValue == "token\(index)",
                    "\(line.text)")
        }
        let funnel = try rig.funnel(code)
        #expect(funnel.status == .done)
        #expect((funnel.targeted, funnel.sent, funnel.failed, funnel.throttled, funnel.ambiguous) == (10, 10, 0, 0, 0))
    }

    @Test func devicesOverTheirFrequencyCapAreThrottledNotSent() throws {
        let rig = try Rig()
        try rig.register(4)
        var throttle = ThrottleSettings()
        throttle.perDeviceCount = 2
        let runner = try rig.runner(throttle: throttle)
        let first = try rig.message()
        runner.run(shard: first.shard) { false }
        // A message capped at one push a day reaches nobody who had one today.
        let capped = try rig.message { $0.cappingDays = 1; $0.cappingCount = 1 }
        runner.run(shard: capped.shard) { false }
        let second = try rig.message()
        runner.run(shard: second.shard) { false }
        // The per-device cap: two pushes per hour.
        let third = try rig.message()
        runner.run(shard: third.shard) { false }

        #expect(try rig.sent(first.code).count == 4 && rig.sent(second.code).count == 4)
        #expect(try rig.sent(capped.code).isEmpty && rig.sent(third.code).isEmpty)
        for code in [capped.code, third.code] {
            let funnel = try rig.funnel(code)
            #expect(funnel.status == .done && (funnel.targeted, funnel.sent, funnel.throttled) == (4, 0, 4))
        }
    }

    @Test func anAppWithoutAProviderFailsEachPushNamingWhy() throws {
        let rig = try Rig()
        try rig.register(4)
        let (code, shard) = try rig.message()
        try rig.runner(withProvider: false).run(shard: shard) { false }
        let funnel = try rig.funnel(code)
        #expect(funnel.status == .done && (funnel.targeted, funnel.sent, funnel.failed) == (4, 0, 4))
        #expect(funnel.errors == ["NoProviderConfigured": 4])
        #expect(try rig.sent(code).isEmpty)
    }

    /// A worker that vanished after handing devices to a provider, before recording them: the next
    /// holder sends those once more, counted as ambiguous, and the rest once.
    @Test func whatAVanishedWorkerHandedOverIsSentOnceMoreAndCountedAmbiguous() throws {
        let rig = try Rig()
        try rig.register(7)
        let (code, shard) = try rig.message(leasedTo: "w0")
        let lost = try #require(try rig.campaigns.claimShard(shard, worker: "w0", leaseUntil: rig.clock.now() + 30, now: rig.clock.now()))
        let handedOver = try rig.campaigns.targets(of: lost, after: 0, limit: 2).map(\.deviceID)
        #expect(try rig.campaigns.markAttempted(lost, through: handedOver[1], worker: "w0"))
        rig.clock.advance(31)
        #expect(try rig.campaigns.releaseLeases(now: rig.clock.now(), liveWorkers: ["w1"]) == 1)
        #expect(try rig.campaigns.leaseShards(worker: "w1", count: 1, now: rig.clock.now(), leaseUntil: rig.clock.now() + 30) == [shard])

        try rig.runner().run(shard: shard) { false }
        #expect(try rig.sent(code).sorted() == (0..<7).map { "d\($0)" })
        let funnel = try rig.funnel(code)
        #expect(funnel.status == .done && (funnel.targeted, funnel.sent, funnel.ambiguous) == (7, 7, 2))
    }

    @Test func aRunnerToldToStopHandsTheShardBackUnsent() throws {
        let rig = try Rig()
        try rig.register(4)
        let (code, shard) = try rig.message()
        try rig.runner().run(shard: shard) { true }
        #expect(try rig.sent(code).isEmpty)
        #expect(try rig.funnel(code).status == .sending)
        // Another worker can take it at once, without waiting for the lease to run out.
        #expect(try rig.campaigns.leaseShards(worker: "w2", count: 1, now: rig.clock.now(), leaseUntil: rig.clock.now() + 30) == [shard])
    }

    @Test func aShardLeasedToAnotherWorkerOrOfADeletedMessageIsLeftAlone() throws {
        let rig = try Rig()
        try rig.register(4)
        let other = try rig.message(leasedTo: "w9")
        try rig.runner().run(shard: other.shard) { false }
        #expect(try rig.sent(other.code).isEmpty)
        #expect(try rig.campaigns.leasedShardCounts() == ["w9": 1])

        let deleted = try rig.message()
        #expect(try rig.campaigns.deleteMessage(app: Rig.app, code: deleted.code, now: rig.clock.now()))
        try rig.runner().run(shard: deleted.shard) { false }
        #expect(try rig.sent(deleted.code).isEmpty)
        #expect(try rig.funnel(deleted.code).status == .deleted)
    }
}
