import Foundation
import SDKClient
import Synchronization

/// Runs a fleet: starts one `FleetWorker` thread per `--threads`, each with its share of the
/// connections, samples their counts every second (the live line and the report's timeline), and
/// adds everything up when they are done.
final class FleetRun {
    let plan: FleetPlan
    let control: RunControl
    private let workers: [FleetWorker]
    private let finished = DispatchSemaphore(value: 0)

    /// `MonotonicClock.now()` of the start (the first request is due then).
    init(plan: FleetPlan, start: Int64) {
        self.plan = plan
        let control = RunControl(start: start, durationSeconds: plan.options.durationSeconds)
        self.control = control
        let options = plan.options
        workers = (0..<options.threads).map { thread in
            FleetWorker(plan: plan, control: control,
                        numbers: Array(stride(from: thread, to: options.connections, by: options.threads)))
        }
    }

    /// Reads the counts while the run goes on, from any thread (what `--metrics-listen` serves).
    struct Probe: Sendable {
        fileprivate let workers: [FleetWorker]
        let start: Int64

        /// Everything counted so far, all workers together.
        func snapshot() -> FleetStats {
            var totals = FleetStats()
            for worker in workers { worker.shared.withLock { totals.merge($0.totals) } }
            return totals
        }
    }

    var probe: Probe { Probe(workers: workers, start: control.start) }

    /// Runs to the end (or until `control` stops it); `progress` gets a line to draw each second.
    func run(progress: ((String) -> Void)?) -> FleetResult {
        for worker in workers {
            let thread = Thread(named: "fleet-worker") { [finished] in
                worker.run()
                finished.signal()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
        var timeline: [SecondSample] = []
        // The last interval is kept open until the next one is known, so that a short final
        // interval (the wait for the last replies) joins it instead of becoming a spike.
        var held: (interval: IntervalStats, from: Int64, to: Int64)?
        func close(_ entry: (interval: IntervalStats, from: Int64, to: Int64)) {
            timeline.append(SecondSample(elapsed: Double(entry.to - control.start) / 1e9, span: Double(entry.to - entry.from) / 1e9,
                                         interval: entry.interval))
        }
        var lastTick = control.start
        var running = workers.count
        var ok = 0, errors = 0
        let duration = plan.options.durationSeconds
        while running > 0 {
            let nextTick = lastTick + 1_000_000_000
            let wait = max(0, nextTick - MonotonicClock.now())
            if finished.wait(timeout: .now() + .nanoseconds(Int(wait))) == .success {
                running -= 1
                if running > 0 { continue }
            }
            let now = MonotonicClock.now()
            guard now >= nextTick || running == 0 else { continue }
            var interval = IntervalStats()
            for worker in workers {
                worker.shared.withLock {
                    interval.merge($0.interval)
                    $0.interval = IntervalStats()
                }
            }
            ok += interval.ok
            errors += interval.failed
            if running > 0 {
                let sample = SecondSample(elapsed: Double(now - control.start) / 1e9, span: Double(now - lastTick) / 1e9, interval: interval)
                progress?(ProgressLine.render(elapsed: sample.elapsed, duration: duration, last: sample, ok: ok, errors: errors))
            }
            if var previous = held, running == 0, now - lastTick < 500_000_000 {
                previous.interval.merge(interval)
                previous.to = now
                held = previous
            } else {
                if let previous = held { close(previous) }
                held = (interval, lastTick, now)
            }
            lastTick = now
        }
        if let last = held, last.interval.ok + last.interval.failed > 0 || timeline.isEmpty { close(last) }
        var totals = FleetStats()
        for worker in workers { worker.shared.withLock { totals.merge($0.totals) } }
        let window = Double(min(control.end, control.start + Int64(duration * 1e9)) - control.start) / 1e9
        return FleetResult(options: plan.options, stats: totals, timeline: timeline, seconds: max(0, window),
                           interrupted: window < duration - 1e-3)
    }
}
