import Foundation
import Synchronization
import Core
import HTTPServer

/// What `/metrics` serves, in the Prometheus text format. Ingest counts requests, reports and SQLite
/// busy errors itself, and report processing from the dispatcher; worker figures (pushes by provider and outcome, provider latency) arrive in
/// the workers' heartbeats and are served here, labelled by worker; the HTTP server counts its
/// connections in `connections`.
final class Metrics: Sendable {
    struct RequestKey: Hashable {
        let route: String
        let status: Int
        let code: Int
    }

    private let requests = Mutex<[RequestKey: Int]>([:])
    private let reports = Mutex<[String: Int]>([:])
    private let busy = Atomic<Int>(0)
    let connections = HTTPConnectionCounters()
    private let storeMemory: @Sendable () -> Int64

    /// `storeMemory` reports what the store's client library holds in this process.
    init(storeMemory: @escaping @Sendable () -> Int64) {
        self.storeMemory = storeMemory
    }

    /// Methods whose success means a report was stored.
    static let reportMethods: Set<String> = [
        "postEvent", "pushStat", "messageDeliveryEvent", "setPurchase", "triggerInAppAction", "richMediaAction", "inboxStatus",
        "setActivityToken", "setActivityPushToStartToken", "registerEmail", "registerEmailUser", "setEmailTags",
    ]

    /// Counts one answered request: the route (a Device API method name, or a path), the HTTP
    /// status, and the envelope's `status_code` (0 when there is none).
    func count(route: String, status: Int, code: Int) {
        requests.withLock { $0[RequestKey(route: route, status: status, code: code), default: 0] += 1 }
        if code == 200, Self.reportMethods.contains(route) { reports.withLock { $0[route, default: 0] += 1 } }
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

    func render(workers: [Dispatcher.Worker], queue: QueueDepth?, reports progress: (pending: Int64, processed: Int64, setAside: Int64),
                dispatching: Bool, dispatcher: String?) -> String {
        var lines: [String] = []
        func family(_ name: String, _ type: String, _ help: String) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
        }
        family("herald_http_requests_total", "counter", "HTTP requests answered, by route, HTTP status and envelope status_code.")
        let snapshot = requests.withLock { $0 }
        for (key, value) in snapshot.sorted(by: { ($0.key.route, $0.key.status, $0.key.code) < ($1.key.route, $1.key.status, $1.key.code) }) {
            lines.append("herald_http_requests_total{route=\"\(Self.label(key.route))\",status=\"\(key.status)\",code=\"\(key.code)\"} \(value)")
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
        for (method, value) in reports.withLock({ $0 }).sorted(by: { $0.key < $1.key }) {
            lines.append("herald_reports_recorded_total{method=\"\(Self.label(method))\"} \(value)")
        }
        family("herald_reports_pending", "gauge", "Reports stored but not yet folded into the statistics by a worker (upper bound).")
        lines.append("herald_reports_pending \(progress.pending)")
        family("herald_reports_processed_total", "counter", "Reports workers folded into the statistics since ingest started.")
        lines.append("herald_reports_processed_total \(progress.processed)")
        family("herald_reports_set_aside_total", "counter",
               "Processed reports left out of the statistics because the database refused a value they count (PostgreSQL; each logged as a WARNING).")
        lines.append("herald_reports_set_aside_total \(progress.setAside)")
        family("herald_sqlite_busy_total", "counter", "Requests answered 503 because SQLite stayed busy past busy_timeout_ms.")
        lines.append("herald_sqlite_busy_total \(busy.load(ordering: .relaxed))")
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
        family("herald_dispatcher_active", "gauge", "1 when this ingest hands out the work; 0 while it stands by for another ingest.")
        lines.append("herald_dispatcher_active \(dispatching ? 1 : 0)")
        family("herald_dispatcher", "gauge", "1 for the ingest (host-pid-4 hex digits) that hands out the work, as this ingest last saw it; absent while none does.")
        if let dispatcher { lines.append("herald_dispatcher{ingest=\"\(Self.label(dispatcher))\"} 1") }
        family("herald_workers_connected", "gauge", "Workers whose heartbeat arrived within the last 5 seconds.")
        lines.append("herald_workers_connected \(workers.count)")
        let sorted = workers.sorted(by: { $0.id < $1.id })
        family("herald_worker_info", "gauge",
               "1 for each connected worker, labelled with the host it names and the address its heartbeats come from (empty when unknown).")
        for worker in sorted {
            lines.append("herald_worker_info{worker=\"\(Self.label(worker.id))\",host=\"\(Self.label(worker.host ?? ""))\",address=\"\(Self.label(worker.address ?? ""))\"} 1")
        }
        family("herald_worker_jobs_in_flight", "gauge", "Shards each connected worker holds.")
        for worker in sorted { lines.append("herald_worker_jobs_in_flight{worker=\"\(Self.label(worker.id))\"} \(worker.jobsInFlight)") }
        family("herald_pushes_total", "counter", "Pushes by worker, provider (apns, fcm, huawei, sink; none when throttled) and outcome.")
        for worker in sorted {
            for (key, value) in (worker.stats["pushes"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
                let parts = key.split(separator: "|", maxSplits: 1).map(String.init)
                guard parts.count == 2, let count = value.lenientInt else { continue }
                lines.append("herald_pushes_total{worker=\"\(Self.label(worker.id))\",provider=\"\(Self.label(parts[0]))\",outcome=\"\(Self.label(parts[1]))\"} \(count)")
            }
        }
        /// A per-worker counter family whose keys are `provider` or `provider|second label`.
        func counters(_ name: String, _ key: String, second: String? = nil, help: String) {
            family(name, "counter", help)
            for worker in sorted {
                for (entry, value) in (worker.stats[key]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
                    let parts = entry.split(separator: "|", maxSplits: 1).map(String.init)
                    guard let count = value.lenientInt, parts.count == (second == nil ? 1 : 2) else { continue }
                    var labels = "worker=\"\(Self.label(worker.id))\",provider=\"\(Self.label(parts[0]))\""
                    if let second { labels += ",\(second)=\"\(Self.label(parts[1]))\"" }
                    lines.append("\(name){\(labels)} \(count)")
                }
            }
        }
        counters("herald_push_retries_total", "retries", second: "reason",
                 help: "Pushes that failed for a transient reason (5xx, 429, connection trouble), by worker, provider and reason.")
        counters("herald_push_ambiguous_total", "ambiguous",
                 help: "Pushes whose connection was lost after the request was written (the provider may have received them).")
        counters("herald_provider_connections_opened_total", "connections", help: "Connections opened to APNs, FCM and Huawei Push Kit, by worker and provider.")
        family("herald_provider_circuit_open", "gauge", "1 while a worker has paused sending to a provider for an app because it is failing.")
        for worker in sorted {
            for (entry, circuit) in (worker.stats["circuits"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
                let parts = entry.split(separator: "|", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { continue }
                let open = circuit["open"] == .bool(true) ? 1 : 0
                lines.append("herald_provider_circuit_open{worker=\"\(Self.label(worker.id))\",provider=\"\(Self.label(parts[0]))\",app=\"\(Self.label(parts[1]))\"} \(open)")
            }
        }
        family("herald_provider_request_seconds", "histogram", "Duration of APNs, FCM and Huawei Push Kit requests, by worker and provider.")
        for worker in sorted {
            for (provider, histogram) in (worker.stats["latency"]?.objectValue ?? [:]).sorted(by: { $0.key < $1.key }) {
                let counts = histogram["buckets"]?.arrayValue?.compactMap(\.lenientInt) ?? []
                var cumulative: Int64 = 0
                let labels = "worker=\"\(Self.label(worker.id))\",provider=\"\(Self.label(provider))\""
                for (bound, count) in zip(Pipeline.latencyBuckets, counts) {
                    cumulative += count
                    lines.append("herald_provider_request_seconds_bucket{\(labels),le=\"\(bound)\"} \(cumulative)")
                }
                let total = histogram["count"]?.lenientInt ?? cumulative
                lines.append("herald_provider_request_seconds_bucket{\(labels),le=\"+Inf\"} \(total)")
                lines.append("herald_provider_request_seconds_sum{\(labels)} \(histogram["sum"]?.lenientDouble ?? 0)")
                lines.append("herald_provider_request_seconds_count{\(labels)} \(total)")
            }
        }
        family("process_resident_memory_bytes", "gauge", "Resident memory of this herald-ingest process.")
        lines.append("process_resident_memory_bytes \(Self.residentBytes())")
        family("herald_store_memory_bytes", "gauge",
               "Part of it held by the store's client library: SQLite's page caches, which fill up to their bound as the database grows; 0 on PostgreSQL.")
        lines.append("herald_store_memory_bytes \(storeMemory())")
        return lines.joined(separator: "\n") + "\n"
    }

    /// This process's resident set in bytes, from `/proc/self/statm` (0 where it cannot be read).
    static func residentBytes() -> Int64 {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int64(fields[1]) else { return 0 }
        return pages * Int64(sysconf(Int32(_SC_PAGESIZE)))
    }
}
