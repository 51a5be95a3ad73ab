/// Messages between ingest and workers, one JSON frame each.
/// Results channel (worker → ingest): `heartbeat`, `ack`, `reports_done`. Jobs channel (ingest →
/// worker): `job`, `reports`.
public enum QueueMessage: Sendable, Equatable {
    /// Every second: who the worker is, how many shards it can hold, how many it holds.
    case heartbeat(worker: String, pid: Int64, capacity: Int64, jobsInFlight: Int64, stats: JSON)
    /// A shard is finished (or abandoned); wakes the dispatcher.
    case ack(worker: String, shard: Int64)
    /// Process this shard (its lease is in the database).
    case job(shard: Int64)
    /// Fold the stored reports with ids in `(after, through]` into the statistics.
    case reports(after: Int64, through: Int64)
    /// A report batch is processed (`processed` of its reports were new).
    case reportsDone(worker: String, after: Int64, processed: Int64)

    public var encoded: [UInt8] {
        switch self {
        case .heartbeat(let worker, let pid, let capacity, let jobs, let stats):
            return JSON.object(["type": "heartbeat", "worker": .string(worker), "pid": .int(pid), "capacity": .int(capacity),
                                "jobs_in_flight": .int(jobs), "stats": stats]).encoded()
        case .ack(let worker, let shard):
            return JSON.object(["type": "ack", "worker": .string(worker), "shard": .int(shard)]).encoded()
        case .job(let shard):
            return JSON.object(["type": "job", "shard": .int(shard)]).encoded()
        case .reports(let after, let through):
            return JSON.object(["type": "reports", "after": .int(after), "through": .int(through)]).encoded()
        case .reportsDone(let worker, let after, let processed):
            return JSON.object(["type": "reports_done", "worker": .string(worker), "after": .int(after), "processed": .int(processed)]).encoded()
        }
    }

    /// Decodes one frame; nil for anything malformed (logged by the caller, never fatal).
    public static func decode(_ frame: [UInt8]) -> QueueMessage? {
        guard let json = try? JSON.parse(frame), let type = json["type"]?.stringValue else { return nil }
        switch type {
        case "heartbeat":
            guard let worker = json["worker"]?.stringValue, let pid = json["pid"]?.lenientInt else { return nil }
            return .heartbeat(worker: worker, pid: pid, capacity: json["capacity"]?.lenientInt ?? 0,
                              jobsInFlight: json["jobs_in_flight"]?.lenientInt ?? 0, stats: json["stats"] ?? [:])
        case "ack":
            guard let worker = json["worker"]?.stringValue, let shard = json["shard"]?.lenientInt else { return nil }
            return .ack(worker: worker, shard: shard)
        case "job":
            guard let shard = json["shard"]?.lenientInt else { return nil }
            return .job(shard: shard)
        case "reports":
            guard let after = json["after"]?.lenientInt, let through = json["through"]?.lenientInt, after < through else { return nil }
            return .reports(after: after, through: through)
        case "reports_done":
            guard let worker = json["worker"]?.stringValue, let after = json["after"]?.lenientInt else { return nil }
            return .reportsDone(worker: worker, after: after, processed: json["processed"]?.lenientInt ?? 0)
        default:
            return nil
        }
    }
}
