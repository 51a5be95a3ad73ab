import Shared
import Synchronization

/// Counters served on `/metrics` in the Prometheus text format.
final class Metrics: Sendable {
    struct RequestKey: Hashable {
        let route: String
        let status: Int
        let code: Int
    }

    private let requests = Mutex<[RequestKey: Int]>([:])

    /// Counts one answered request: the route (a Device API method name, or a path), the HTTP
    /// status, and the envelope's `status_code` (0 when there is none).
    func count(route: String, status: Int, code: Int) {
        requests.withLock { $0[RequestKey(route: route, status: status, code: code), default: 0] += 1 }
    }

    func render(workers: [Dispatcher.Worker]) -> String {
        var lines = [
            "# HELP herald_http_requests_total HTTP requests answered, by route, HTTP status and envelope status_code.",
            "# TYPE herald_http_requests_total counter",
        ]
        let snapshot = requests.withLock { $0 }
        for (key, value) in snapshot.sorted(by: { ($0.key.route, $0.key.status, $0.key.code) < ($1.key.route, $1.key.status, $1.key.code) }) {
            lines.append("herald_http_requests_total{route=\"\(key.route)\",status=\"\(key.status)\",code=\"\(key.code)\"} \(value)")
        }
        lines.append("# HELP herald_workers_connected Workers whose heartbeat arrived within the last 5 seconds.")
        lines.append("# TYPE herald_workers_connected gauge")
        lines.append("herald_workers_connected \(workers.count)")
        lines.append("# HELP herald_worker_jobs_in_flight Jobs each connected worker reports in flight.")
        lines.append("# TYPE herald_worker_jobs_in_flight gauge")
        for worker in workers.sorted(by: { $0.id < $1.id }) {
            lines.append("herald_worker_jobs_in_flight{worker=\"\(worker.id)\"} \(worker.jobsInFlight)")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
