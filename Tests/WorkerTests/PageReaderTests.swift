import Foundation
import Synchronization
import Testing
import Core
@testable import Worker

/// The shard runner's page reader, over a made-up shard of devices 1…n: pages come in order, two
/// read ahead at most, none after the last; a restart drops what was read ahead; stop waits for the
/// read in progress, and nothing is read afterwards.
@Suite struct PageReaderTests {
    /// A shard of devices 1…`devices` read `limit` at a time, noting where each read started; a read
    /// after `failAfter` fails, and when `gated`, each read waits until `letThrough` lets it go.
    final class Shard: Sendable {
        let devices: Int64
        let failAfter: Int64?
        let gate: DispatchSemaphore?
        let reads = Mutex<[Int64]>([])

        init(devices: Int64, failAfter: Int64? = nil, gated: Bool = false) {
            self.devices = devices
            self.failAfter = failAfter
            gate = gated ? DispatchSemaphore(value: 0) : nil
        }

        /// Lets `count` more reads through the gate.
        func letThrough(_ count: Int = 1) {
            for _ in 0..<count { gate?.signal() }
        }

        func read(after: Int64, limit: Int) -> Result<PreparedPage, any Error> {
            reads.withLock { $0.append(after) }
            gate?.wait()
            if let failAfter, after >= failAfter { return .failure(CancellationError()) }
            let ids = Array(stride(from: after + 1, through: min(devices, after + Int64(limit)), by: 1))
            let targets = ids.map { Target(deviceID: $0, hwid: "h\($0)", platform: 1, pushToken: "t", gateway: nil, language: nil, badge: 0) }
            return .success(PreparedPage(page: targets, recentSends: nil, throttled: [], allowed: targets))
        }

        /// Waits up to 2 s for `count` reads to have started.
        func waitForReads(_ count: Int) -> [Int64] {
            for _ in 0..<200 where reads.withLock({ $0.count }) < count { Thread.sleep(forTimeInterval: 0.01) }
            return reads.withLock { $0 }
        }
    }

    func reader(_ shard: Shard, after: Int64 = 0, limit: Int = 3) -> PageReader {
        PageReader(after: after, limit: limit) { after in shard.read(after: after, limit: limit) }
    }

    /// Stops `pages` at the end of a test over a gated shard: the read held at the gate goes first.
    func stop(_ pages: PageReader, gated shard: Shard) {
        shard.letThrough(10)
        pages.stop()
    }

    @Test func pagesComeInOrderAndNothingIsReadAfterTheLast() throws {
        let shard = Shard(devices: 7)
        let pages = reader(shard)
        defer { pages.stop() }
        #expect(try pages.next().page.map(\.deviceID) == [1, 2, 3])
        #expect(try pages.next().page.map(\.deviceID) == [4, 5, 6])
        #expect(try pages.next().page.map(\.deviceID) == [7])
        #expect(try pages.next().page.isEmpty)
        #expect(try pages.next().page.isEmpty)
        #expect(shard.reads.withLock { $0 } == [0, 3, 6])
    }

    @Test func aPageNotReadYetIsNotWaitedForByNextIfReady() throws {
        let shard = Shard(devices: 4, gated: true)
        let pages = reader(shard)
        defer { stop(pages, gated: shard) }
        #expect(shard.waitForReads(1) == [0])
        #expect(try pages.nextIfReady() == nil, "the first read is held at the gate")
        shard.letThrough()
        #expect(try pages.next().page.map(\.deviceID) == [1, 2, 3])
        shard.letThrough()
        var last: PreparedPage?
        for _ in 0..<200 where last == nil {
            last = try pages.nextIfReady()
            if last == nil { Thread.sleep(forTimeInterval: 0.01) }
        }
        #expect(last?.page.map(\.deviceID) == [4])
        #expect(try pages.nextIfReady()?.page.isEmpty == true, "after the last page: an empty one, not nil")
    }

    @Test func anExactMultipleEndsWithAnEmptyPage() throws {
        let shard = Shard(devices: 6)
        let pages = reader(shard)
        defer { pages.stop() }
        #expect(try pages.next().page.count == 3)
        #expect(try pages.next().page.count == 3)
        #expect(try pages.next().page.isEmpty)
        #expect(shard.reads.withLock { $0 } == [0, 3, 6])
    }

    @Test func twoPagesAtMostAreReadAhead() throws {
        let shard = Shard(devices: 100, gated: true)
        let pages = reader(shard)
        defer { stop(pages, gated: shard) }
        shard.letThrough()
        #expect(try pages.next().page.first?.deviceID == 1)
        // Pages 2 and 3 are read while page 1 is being sent; page 4 waits until page 2 is taken.
        shard.letThrough(3)
        #expect(shard.waitForReads(3) == [0, 3, 6])
        Thread.sleep(forTimeInterval: 0.1)
        #expect(shard.reads.withLock { $0 } == [0, 3, 6], "page 4 is not read while pages 2 and 3 wait")
        #expect(try pages.next().page.first?.deviceID == 4)
        #expect(try pages.next().page.first?.deviceID == 7)
    }

    @Test func aRestartDropsWhatWasReadAheadAndTheReadInProgress() throws {
        let shard = Shard(devices: 20, gated: true)
        let pages = reader(shard)
        defer { stop(pages, gated: shard) }
        shard.letThrough()
        #expect(try pages.next().page.map(\.deviceID) == [1, 2, 3])
        // Page 2 is read and waits; the read of page 3 is in progress (held at the gate).
        shard.letThrough()
        #expect(shard.waitForReads(3) == [0, 3, 6])
        // A probe sent devices 1 and 2 only: what comes next is the page after 2, not page 2 nor
        // the page 3 being read.
        pages.restart(after: 2)
        shard.letThrough(4)
        #expect(try pages.next().page.map(\.deviceID) == [3, 4, 5])
        #expect(try pages.next().page.map(\.deviceID) == [6, 7, 8])
    }

    @Test func aFailedReadIsThrownAndEndsTheReading() throws {
        let shard = Shard(devices: 20, failAfter: 3)
        let pages = reader(shard)
        defer { pages.stop() }
        #expect(try pages.next().page.count == 3)
        #expect(throws: CancellationError.self) { try pages.next() }
        #expect(try pages.next().page.isEmpty)
        #expect(shard.reads.withLock { $0 } == [0, 3])
    }

    @Test func stopWaitsForTheReadInProgressAndNothingIsReadAfterwards() throws {
        let shard = Shard(devices: 100, gated: true)
        let pages = reader(shard)
        #expect(shard.waitForReads(1) == [0])
        let stopped = DispatchSemaphore(value: 0)
        let stopper = Thread {
            pages.stop()
            stopped.signal()
        }
        stopper.start()
        #expect(stopped.wait(timeout: .now() + 0.1) == .timedOut, "stop returned while a read was in progress")
        shard.letThrough()
        #expect(stopped.wait(timeout: .now() + 2) == .success)
        shard.letThrough()
        Thread.sleep(forTimeInterval: 0.05)
        #expect(shard.reads.withLock { $0 } == [0])
        #expect(try pages.next().page.isEmpty)
    }
}
