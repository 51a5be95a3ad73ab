import Foundation
import Synchronization
import BuildInfo
import Core
import HTTPServer

/// What `/metrics` serves, in the Prometheus text format. Ingest counts and times requests, counts
/// reports and the store's retryable failures itself, and report processing and the campaign
/// housekeeping (messages started and done, leases returned) from the dispatcher;
/// worker figures (pushes by provider and outcome, provider latency, the process's CPU, memory and
/// start) arrive in the workers' heartbeats as `WorkerStatistics` and are served here, labelled by
/// the worker's stable name; the HTTP server counts its connections in `connections`.
final class Metrics: Sendable {
    /// One route's answers: how many of each HTTP status and envelope `status_code`, how long they
    /// took by status class, and, for a report method, how many reports it stored. Counting an
    /// answer finds its route once (the answers of writes are counted on the database writer).
    struct RouteCounts {
        /// Few per route, so looked for in order.
        var answers: [(status: Int, code: Int, count: Int)] = []
        /// By status class, 1xx to 5xx.
        var durations = [Histogram?](repeating: nil, count: 5)
        let isReportMethod: Bool
        var reports = 0

        init(route: String) { isReportMethod = Metrics.reportMethods.contains(route) }

        mutating func record(status: Int, code: Int, seconds: Double) {
            count(status: status, code: code, adding: 1)
            let statusClass = min(max(status / 100, 1), 5) - 1
            // Recorded in place: the histogram's counts are not copied per answer.
            if durations[statusClass] == nil { durations[statusClass] = Histogram() }
            durations[statusClass]!.record(seconds)
            if code == 200, isReportMethod { reports += 1 }
        }

        /// Adds `answered` answers of that HTTP status and `status_code`.
        private mutating func count(status: Int, code: Int, adding answered: Int) {
            if let index = answers.firstIndex(where: { $0.status == status && $0.code == code }) {
                answers[index].count += answered
            } else {
                answers.append((status, code, answered))
            }
        }

        /// Adds the answers `other` counted for the same route.
        mutating func add(_ other: RouteCounts) {
            for answer in other.answers { count(status: answer.status, code: answer.code, adding: answer.count) }
            for (statusClass, histogram) in other.durations.enumerated() {
                guard let histogram else { continue }
                if durations[statusClass] == nil { durations[statusClass] = Histogram() }
                durations[statusClass]!.add(histogram)
            }
            reports += other.reports
        }
    }

    /// Request durations of one route and status class: counts per bucket of `durationBuckets` (not
    /// cumulative), sum, count.
    struct Histogram {
        var counts = [Int](repeating: 0, count: Metrics.durationBuckets.count)
        var sum = 0.0
        var count = 0

        mutating func record(_ seconds: Double) {
            if let bucket = Metrics.durationBuckets.firstIndex(where: { seconds <= $0 }) { counts[bucket] += 1 }
            sum += max(0, seconds)
            count += 1
        }

        mutating func add(_ other: Histogram) {
            for (bucket, count) in other.counts.enumerated() { counts[bucket] += count }
            sum += other.sum
            count += other.count
        }
    }

    /// `status_class` label values, from 1xx to 5xx.
    static let statusClasses = (1...5).map { "\($0)xx" }

    /// The upper bounds, in seconds, of `herald_http_request_duration_seconds`.
    static let durationBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// The answers counted, in stripes: a thread counts into the stripe its id picks, so that the
    /// I/O loops and the database writer seldom wait for one another's lock (with one lock for all,
    /// getTags ran about 3% slower). `routes` adds the stripes up. 32 stripes: five busy threads
    /// share one with a chance of about 1 in 4.
    private let stripes = StripedLock<[String: RouteCounts]>(bits: 5, [:])

    /// Every route's answers, from all stripes.
    private var routes: [String: RouteCounts] {
        var routes: [String: RouteCounts] = [:]
        for stripe in stripes.all {
            for (route, counts) in stripe.withLock({ $0 }) {
                if routes[route] == nil { routes[route] = counts } else { routes[route]!.add(counts) }
            }
        }
        return routes
    }
    private let busy = Atomic<Int>(0)
    let connections = HTTPConnectionCounters()
    private let storeMemory: @Sendable () -> Int64
    private let usesPostgres: Bool

    /// `storeMemory` reports what the store's client library holds in this process; `usesPostgres`
    /// names the backend whose retryable failures (answered 503) are counted.
    init(storeMemory: @escaping @Sendable () -> Int64, usesPostgres: Bool) {
        self.storeMemory = storeMemory
        self.usesPostgres = usesPostgres
    }

    /// Methods whose success means a report was stored.
    static let reportMethods: Set<String> = [
        "postEvent", "pushStat", "messageDeliveryEvent", "setPurchase", "triggerInAppAction", "richMediaAction", "inboxStatus",
        "setActivityToken", "setActivityPushToStartToken", "registerEmail", "registerEmailUser", "setEmailTags",
    ]

    /// Counts one answered request: the route (a Device API method name, or a path), the HTTP
    /// status, the envelope's `status_code` (0 when there is none), and how long ingest took from
    /// the complete request to the response (for a write: its commit included).
    func count(route: String, status: Int, code: Int, seconds: Double) {
        stripes.current.withLock { $0[route, default: RouteCounts(route: route)].record(status: status, code: code, seconds: seconds) }
        if status == 503 { busy.add(1, ordering: .relaxed) }
    }

    /// A label value in the text format: backslash, double quote and line feed escaped.
    static func label(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// The connected workers with the `worker` label of their series, sorted by it: the name each
    /// gives (its id when it gives none); workers that give the same name are told apart by their pid.
    static func labelled(_ workers: [Dispatcher.Worker]) -> [(String, Dispatcher.Worker)] {
        let names = Dictionary(grouping: workers, by: { $0.name ?? $0.id })
        return workers.map { worker in
            let name = worker.name ?? worker.id
            return (names[name, default: []].count > 1 ? "\(name)-\(worker.pid)" : name, worker)
        }.sorted { ($0.0, $0.1.id) < ($1.0, $1.1.id) }
    }

    func render(workers: [Dispatcher.Worker], queue: QueueDepth?, reports progress: (pending: Int64, processed: Int64, setAside: Int64),
                housekeeping: ShardDispatch.Housekeeping, dispatching: Bool, dispatcher: String?) -> String {
        var lines: [String] = []
        func family(_ name: String, _ type: String, _ help: String) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
        }
        /// One histogram's series: cumulative buckets, `+Inf`, sum and count.
        func histogramLines(_ name: String, labels: String, bounds: [Double], counts: [Int64], sum: Double, count: Int64) {
            var cumulative: Int64 = 0
            for (bound, bucket) in zip(bounds, counts) {
                cumulative += bucket
                lines.append("\(name)_bucket{\(labels),le=\"\(bound)\"} \(cumulative)")
            }
            lines.append("\(name)_bucket{\(labels),le=\"+Inf\"} \(max(count, cumulative))")
            lines.append("\(name)_sum{\(labels)} \(sum)")
            lines.append("\(name)_count{\(labels)} \(max(count, cumulative))")
        }
        family("herald_build_info", "gauge", "1, labelled with the version and git commit this herald-ingest was built from.")
        lines.append("herald_build_info{version=\"\(Self.label(BuildInfo.version))\",commit=\"\(Self.label(BuildInfo.commit))\"} 1")
        let process = ProcessFigures.current()
        family("process_cpu_seconds_total", "counter", "User and system CPU time of this herald-ingest process, in seconds.")
        lines.append("process_cpu_seconds_total \(process.cpuSeconds)")
        family("process_start_time_seconds", "gauge", "When this herald-ingest process started, in seconds since the Unix epoch.")
        lines.append("process_start_time_seconds \(process.startTimeSeconds)")
        family("herald_http_requests_total", "counter", "HTTP requests answered, by route, HTTP status and envelope status_code.")
        let counted = routes.sorted { $0.key < $1.key }
        for (route, counts) in counted {
            for answer in counts.answers.sorted(by: { ($0.status, $0.code) < ($1.status, $1.code) }) {
                lines.append("herald_http_requests_total{route=\"\(Self.label(route))\",status=\"\(answer.status)\",code=\"\(answer.code)\"} \(answer.count)")
            }
        }
        family("herald_http_request_duration_seconds", "histogram",
               "Time from a complete request to its response (a write's commit included), by route and HTTP status class.")
        for (route, counts) in counted {
            for (statusClass, histogram) in zip(Self.statusClasses, counts.durations) {
                guard let histogram else { continue }
                let labels = "route=\"\(Self.label(route))\",status_class=\"\(statusClass)\""
                histogramLines("herald_http_request_duration_seconds", labels: labels, bounds: Self.durationBuckets,
                               counts: histogram.counts.map(Int64.init), sum: histogram.sum, count: Int64(histogram.count))
            }
        }
        let edge = connections.snapshot
        family("herald_http_connections_open", "gauge", "HTTP connections open.")
        lines.append("herald_http_connections_open \(edge.open)")
        family("herald_http_connections_cut_total", "counter",
               "HTTP connections shut down for missing a deadline: the request line and headers, or the body at its minimum rate.")
        lines.append("herald_http_connections_cut_total{deadline=\"headers\"} \(edge.cutHeaders)")
        lines.append("herald_http_connections_cut_total{deadline=\"body\"} \(edge.cutBody)")
        family("herald_http_connections_evicted_total", "counter",
               "HTTP connections still waiting for headers, shut down at http.connection_limit to make room for a new one.")
        lines.append("herald_http_connections_evicted_total \(edge.evicted)")
        family("herald_http_connections_refused_total", "counter",
               "Requests answered 503 at http.connection_limit because every connection held a request in progress.")
        lines.append("herald_http_connections_refused_total \(edge.refused)")
        family("herald_reports_recorded_total", "counter", "SDK reports (events, opens, deliveries, purchases, actions) stored, by method.")
        for (method, counts) in counted where counts.reports > 0 {
            lines.append("herald_reports_recorded_total{method=\"\(Self.label(method))\"} \(counts.reports)")
        }
        family("herald_reports_pending", "gauge", "Reports stored but not yet folded into the statistics by a worker (upper bound).")
        lines.append("herald_reports_pending \(progress.pending)")
        family("herald_reports_processed_total", "counter", "Reports workers folded into the statistics since ingest started.")
        lines.append("herald_reports_processed_total \(progress.processed)")
        family("herald_reports_set_aside_total", "counter",
               "Processed reports left out of the statistics because the database refused a value they count (PostgreSQL; each logged as a WARNING).")
        lines.append("herald_reports_set_aside_total \(progress.setAside)")
        if usesPostgres {
            family("herald_postgres_unavailable_total", "counter",
                   "Requests answered 503 because PostgreSQL failed with a retryable error (connection lost, serialization failure, server busy).")
            lines.append("herald_postgres_unavailable_total \(busy.load(ordering: .relaxed))")
        } else {
            family("herald_sqlite_busy_total", "counter", "Requests answered 503 because SQLite stayed busy past busy_timeout_ms.")
            lines.append("herald_sqlite_busy_total \(busy.load(ordering: .relaxed))")
        }
        if let queue {
            family("herald_messages", "gauge", "Messages not finished yet, by status.")
            for status in [MessageState.scheduled, .queued, .sending].map(\.rawValue) {
                lines.append("herald_messages{status=\"\(status)\"} \(queue.messages[status] ?? 0)")
            }
            family("herald_shards", "gauge", "Campaign shards waiting for a worker (pending) or being sent (leased).")
            for status in [ShardState.pending, .leased].map(\.rawValue) { lines.append("herald_shards{status=\"\(status)\"} \(queue.shards[status] ?? 0)") }
            family("herald_retries_pending", "gauge", "Pushes of unfinished messages that failed for a transient reason and wait for their next attempt.")
            lines.append("herald_retries_pending \(queue.retrying)")
        }
        family("herald_messages_started_total", "counter", "Messages this ingest split into shards when they came due, while it dispatched.")
        lines.append("herald_messages_started_total \(housekeeping.started)")
        family("herald_messages_done_total", "counter", "Messages this ingest marked done once all their shards finished, while it dispatched.")
        lines.append("herald_messages_done_total \(housekeeping.done)")
        family("herald_shard_leases_released_total", "counter",
               "Shard leases this ingest returned to the pool because they ran out or their worker went silent; each such shard is leased again.")
        lines.append("herald_shard_leases_released_total \(housekeeping.released)")
        family("herald_dispatcher_active", "gauge", "1 when this ingest hands out the work; 0 while it stands by for another ingest.")
        lines.append("herald_dispatcher_active \(dispatching ? 1 : 0)")
        family("herald_dispatcher", "gauge", "1 for the ingest (host-pid-4 hex digits) that hands out the work, as this ingest last saw it; absent while none does.")
        if let dispatcher { lines.append("herald_dispatcher{ingest=\"\(Self.label(dispatcher))\"} 1") }
        family("herald_workers_connected", "gauge", "Workers whose heartbeat arrived within the last 5 seconds.")
        lines.append("herald_workers_connected \(workers.count)")
        let named = Self.labelled(workers)
        family("herald_worker_info", "gauge",
               "1 for each connected worker (labelled by its stable name), with its id for this run, the host it names and the address its heartbeats come from.")
        for (label, worker) in named {
            lines.append("herald_worker_info{worker=\"\(Self.label(label))\",id=\"\(Self.label(worker.id))\",host=\"\(Self.label(worker.host ?? ""))\","
                + "address=\"\(Self.label(worker.address ?? ""))\"} 1")
        }
        family("herald_worker_jobs_in_flight", "gauge", "Shards each connected worker holds.")
        for (label, worker) in named { lines.append("herald_worker_jobs_in_flight{worker=\"\(Self.label(label))\"} \(worker.jobsInFlight)") }
        family("herald_worker_cpu_seconds_total", "counter", "User and system CPU time of each connected worker process, in seconds.")
        for (label, worker) in named {
            if let process = worker.stats.process { lines.append("herald_worker_cpu_seconds_total{worker=\"\(Self.label(label))\"} \(process.cpuSeconds)") }
        }
        family("herald_worker_resident_memory_bytes", "gauge", "Resident memory of each connected worker process.")
        for (label, worker) in named {
            if let process = worker.stats.process { lines.append("herald_worker_resident_memory_bytes{worker=\"\(Self.label(label))\"} \(process.residentBytes)") }
        }
        family("herald_worker_start_time_seconds", "gauge", "When each connected worker process started, in seconds since the Unix epoch.")
        for (label, worker) in named {
            if let process = worker.stats.process { lines.append("herald_worker_start_time_seconds{worker=\"\(Self.label(label))\"} \(process.startTimeSeconds)") }
        }
        family("herald_pushes_total", "counter", "Pushes by worker, provider (apns, fcm, huawei, web, sink; none when throttled) and outcome.")
        for (label, worker) in named {
            for entry in worker.stats.pushes.sorted(by: { ($0.provider, $0.outcome) < ($1.provider, $1.outcome) }) {
                lines.append("herald_pushes_total{worker=\"\(Self.label(label))\",provider=\"\(Self.label(entry.provider))\",outcome=\"\(Self.label(entry.outcome))\"} \(entry.count)")
            }
        }
        family("herald_push_retries_total", "counter",
               "Pushes that failed for a transient reason (5xx, 429, connection trouble), by worker, provider and reason.")
        for (label, worker) in named {
            for entry in worker.stats.retries.sorted(by: { ($0.provider, $0.reason) < ($1.provider, $1.reason) }) {
                lines.append("herald_push_retries_total{worker=\"\(Self.label(label))\",provider=\"\(Self.label(entry.provider))\",reason=\"\(Self.label(entry.reason))\"} \(entry.count)")
            }
        }
        /// A per-worker counter family by provider.
        func perProvider(_ name: String, _ values: (WorkerStatistics) -> [WorkerStatistics.ProviderCount], help: String) {
            family(name, "counter", help)
            for (label, worker) in named {
                for entry in values(worker.stats).sorted(by: { $0.provider < $1.provider }) {
                    lines.append("\(name){worker=\"\(Self.label(label))\",provider=\"\(Self.label(entry.provider))\"} \(entry.count)")
                }
            }
        }
        perProvider("herald_push_ambiguous_total", \.ambiguous,
                    help: "Pushes whose connection was lost after the request was written (the provider may have received them).")
        perProvider("herald_provider_connections_opened_total", \.connections, help: "Connections opened to APNs, FCM, Huawei Push Kit and push services, by worker and provider.")
        family("herald_provider_circuit_open", "gauge", "1 while a worker has paused sending to a provider for an app because it is failing.")
        for (label, worker) in named {
            for circuit in worker.stats.circuits.sorted(by: { ($0.provider, $0.app) < ($1.provider, $1.app) }) {
                lines.append("herald_provider_circuit_open{worker=\"\(Self.label(label))\",provider=\"\(Self.label(circuit.provider))\",app=\"\(Self.label(circuit.app))\"} \(circuit.open ? 1 : 0)")
            }
        }
        family("herald_provider_request_seconds", "histogram", "Duration of APNs, FCM, Huawei Push Kit and Web Push requests, by worker and provider.")
        for (label, worker) in named {
            for histogram in worker.stats.latency.sorted(by: { $0.provider < $1.provider }) {
                histogramLines("herald_provider_request_seconds", labels: "worker=\"\(Self.label(label))\",provider=\"\(Self.label(histogram.provider))\"",
                               bounds: Pipeline.latencyBuckets, counts: histogram.buckets, sum: histogram.sum, count: histogram.count)
            }
        }
        family("process_resident_memory_bytes", "gauge", "Resident memory of this herald-ingest process.")
        lines.append("process_resident_memory_bytes \(process.residentBytes)")
        family("herald_store_memory_bytes", "gauge",
               "Part of it held by the store's client library: SQLite's page caches, which fill up to their bound as the database grows; 0 on PostgreSQL.")
        lines.append("herald_store_memory_bytes \(storeMemory())")
        return lines.joined(separator: "\n") + "\n"
    }
}
