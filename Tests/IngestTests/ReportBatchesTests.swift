import Testing
import Core
@testable import Ingest

@Suite struct ReportBatchesTests {
    @Test func reportBatchesCoverTheBacklogOnceAndMoveOffSilentWorkers() {
        #expect(Pipeline.reportBatchSize == 5_000 && ReportBatches.perWorker == 2)
        var batches = ReportBatches()
        func ranges(_ sends: [ReportBatches.Batch]) -> [[String]] { sends.map { [$0.worker, "\($0.after)-\($0.through)"] } }
        // Reports 1…12,000 stored, the first 1,000 processed before ingest started.
        var backlog = ReportBacklog(firstUnprocessed: 1_001, last: 12_000)
        #expect(ranges(batches.assign(backlog: backlog, workers: ["a", "b"], now: 0)) == [["a", "1000-6000"], ["b", "6000-11000"]])
        // The partial rest waits for more reports, up to `gathering`.
        #expect(batches.assign(backlog: backlog, workers: ["a", "b"], now: ReportBatches.gathering / 2).isEmpty)
        #expect(ranges(batches.assign(backlog: backlog, workers: ["a", "b"], now: ReportBatches.gathering)) == [["a", "11000-12000"]])
        // Nothing new: nothing sent. More stored: b takes its second batch, then both are full.
        #expect(batches.assign(backlog: backlog, workers: ["a", "b"], now: 1).isEmpty)
        backlog.last = 40_000
        #expect(ranges(batches.assign(backlog: backlog, workers: ["a", "b"], now: 2)) == [["b", "12000-17000"]])
        #expect(batches.assign(backlog: backlog, workers: ["a", "b"], now: 3).isEmpty)
        // An ack frees a place and counts what was processed; only the worker holding the batch may give it.
        let wrongWorker = batches.acknowledged(worker: "b", after: 1_000, processed: 5_000)
        let noSuchBatch = batches.acknowledged(worker: "a", after: 77, processed: 5_000)
        #expect(!wrongWorker && !noSuchBatch && batches.processed == 0)
        let accepted = batches.acknowledged(worker: "a", after: 1_000, processed: 5_000)
        #expect(accepted)
        backlog.firstUnprocessed = 6_001
        #expect(batches.processed == 5_000)
        #expect(ranges(batches.assign(backlog: backlog, workers: ["a", "b"], now: 4)) == [["a", "17000-22000"]])
        // b goes away: its batches wait for room, then go to a, oldest first.
        #expect(batches.assign(backlog: backlog, workers: ["a"], now: 5).isEmpty)
        batches.acknowledged(worker: "a", after: 11_000, processed: 1_000)
        #expect(ranges(batches.assign(backlog: backlog, workers: ["a"], now: 6)) == [["a", "6000-11000"]])
        // c joins and takes b's other batch and a new one; a falls silent and, after the timeout,
        // its two batches go to d.
        #expect(ranges(batches.assign(backlog: backlog, workers: ["a", "c"], now: 7)) == [["c", "12000-17000"], ["c", "22000-27000"]])
        #expect(ranges(batches.assign(backlog: backlog, workers: ["a", "c", "d"], now: 7 + ReportBatches.timeout))
                == [["d", "6000-11000"], ["d", "17000-22000"]])
    }

    @Test func nothingIsHandedOutWhenEarlierBatchesProcessedTheRest() {
        var batches = ReportBatches()
        // Ingest restarted: 1…3,000 unprocessed, so the partial batch waits for more reports…
        #expect(batches.assign(backlog: ReportBacklog(firstUnprocessed: 1, last: 3_000), workers: ["a"], now: 0).isEmpty)
        // …while batches queued before the restart processed all of them: no empty batch goes out.
        #expect(batches.assign(backlog: ReportBacklog(firstUnprocessed: nil, last: 3_000), workers: ["a"], now: 1).isEmpty)
        #expect(batches.outstanding.isEmpty && batches.cursor == 3_000)
    }

    @Test func anUncoveredUnprocessedReportIsHandedOutAgain() {
        var batches = ReportBatches()
        _ = batches.assign(backlog: ReportBacklog(firstUnprocessed: 1, last: 100), workers: ["a"], now: 0)
        #expect(batches.assign(backlog: ReportBacklog(firstUnprocessed: 1, last: 100), workers: ["a"], now: 1).count == 1)
        // The worker acknowledged without processing report 40 (it failed it), so it is still unprocessed.
        batches.acknowledged(worker: "a", after: 0, processed: 99)
        _ = batches.assign(backlog: ReportBacklog(firstUnprocessed: 40, last: 100), workers: ["a"], now: 2)
        let sends = batches.assign(backlog: ReportBacklog(firstUnprocessed: 40, last: 100), workers: ["a"], now: 3)
        #expect(sends.map { [$0.after, $0.through] } == [[39, 100]])
    }
}
