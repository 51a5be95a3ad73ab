/// Messages between ingest and workers, one JSON frame each.
/// Results channel (worker → ingest): `heartbeat`, `ack`, `reports_done`. Jobs channel (ingest →
/// worker): `job`, `reports`.
public enum QueueMessage: Sendable, Equatable {
    /// Every second: who the worker is (its id, and its stable name for `/metrics`), on which host
    /// (each nil from a worker that does not say), how many shards it can hold, how many it holds,
    /// and its statistics.
    case heartbeat(worker: String, name: String?, host: String?, pid: Int64, capacity: Int64, jobsInFlight: Int64, stats: WorkerStatistics)
    /// A shard is finished (or abandoned); wakes the dispatcher.
    case ack(worker: String, shard: Int64)
    /// Process this shard (its lease is in the database).
    case job(shard: Int64)
    /// Fold the stored reports with ids in `(after, through]` into the statistics.
    case reports(after: Int64, through: Int64)
    /// A report batch is processed (`processed` of its reports were new, `setAside` of those were
    /// set aside uncounted; absent from a worker that does not say, 0).
    case reportsDone(worker: String, after: Int64, processed: Int64, setAside: Int64 = 0)

    public var encoded: [UInt8] {
        switch self {
        case .heartbeat(let worker, let name, let host, let pid, let capacity, let jobs, let stats):
            var members: [String: JSON] = ["type": "heartbeat", "worker": .string(worker), "pid": .int(pid), "capacity": .int(capacity),
                                           "jobs_in_flight": .int(jobs), "stats": stats.json]
            members["host"] = host.map(JSON.string)
            members["name"] = name.map(JSON.string)
            return JSON.object(members).encoded()
        case .ack(let worker, let shard):
            return JSON.object(["type": "ack", "worker": .string(worker), "shard": .int(shard)]).encoded()
        case .job(let shard):
            return JSON.object(["type": "job", "shard": .int(shard)]).encoded()
        case .reports(let after, let through):
            return JSON.object(["type": "reports", "after": .int(after), "through": .int(through)]).encoded()
        case .reportsDone(let worker, let after, let processed, let setAside):
            return JSON.object(["type": "reports_done", "worker": .string(worker), "after": .int(after), "processed": .int(processed),
                                "set_aside": .int(setAside)]).encoded()
        }
    }

    /// The largest frame either side accepts (ingest also sets it as the sockets' ZMQ_MAXMSGSIZE, so
    /// libzmq drops a peer that sends more).
    public static let maxFrameBytes = 262_144

    /// Decodes one frame strictly: nil for anything malformed or out of range (logged by the
    /// caller, never fatal). Worker ids, and a heartbeat's name and host when it gives them, are
    /// 1–200 characters of letters, digits and `.-_:`; numbers must lie in their ranges; a
    /// heartbeat's capacity is capped at `Pipeline.workerCapacity`; statistics that do not decode
    /// as `WorkerStatistics` within its bounds are dropped (the heartbeat stays).
    public static func decode(_ frame: [UInt8]) -> QueueMessage? {
        guard frame.count <= maxFrameBytes, let json = try? JSON.parse(frame), let type = json["type"]?.stringValue else { return nil }
        func int(_ key: String, _ range: ClosedRange<Int64>) -> Int64? {
            guard case .int(let value)? = json[key], range.contains(value) else { return nil }
            return value
        }
        func worker() -> String? {
            guard let id = json["worker"]?.stringValue, isWorkerID(id) else { return nil }
            return id
        }
        switch type {
        case "heartbeat":
            var labels: [String: String] = [:]
            for key in ["host", "name"] {
                guard let given = json[key] else { continue }
                guard let text = given.stringValue, isWorkerID(text) else { return nil }
                labels[key] = text
            }
            guard let worker = worker(), let pid = int("pid", 1...Int64(Int32.max)), let capacity = int("capacity", 0...Int64(Int32.max)),
                  let jobs = int("jobs_in_flight", 0...1_000_000) else { return nil }
            return .heartbeat(worker: worker, name: labels["name"], host: labels["host"], pid: pid, capacity: min(capacity, Pipeline.workerCapacity),
                              jobsInFlight: jobs, stats: json["stats"].flatMap(WorkerStatistics.init(json:)) ?? WorkerStatistics())
        case "ack":
            guard let worker = worker(), let shard = int("shard", 1...Int64.max) else { return nil }
            return .ack(worker: worker, shard: shard)
        case "job":
            guard let shard = int("shard", 1...Int64.max) else { return nil }
            return .job(shard: shard)
        case "reports":
            guard let after = int("after", 0...Int64.max), let through = int("through", 0...Int64.max), after < through,
                  through - after <= Pipeline.reportBatchSize else { return nil }
            return .reports(after: after, through: through)
        case "reports_done":
            guard let worker = worker(), let after = int("after", 0...Int64.max),
                  let processed = int("processed", 0...Pipeline.reportBatchSize),
                  let setAside = json["set_aside"] == nil ? 0 : int("set_aside", 0...processed) else { return nil }
            return .reportsDone(worker: worker, after: after, processed: processed, setAside: setAside)
        default:
            return nil
        }
    }

    /// Whether `id` can name a worker or its host (and so appear in logs and `/metrics` labels).
    public static func isWorkerID(_ id: String) -> Bool {
        (1...200).contains(id.utf8.count) && id.unicodeScalars.allSatisfy(isNameCharacter)
    }

    /// Whether a worker id may hold `scalar`: an ASCII letter or digit, or one of `.-_:`.
    static func isNameCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "0"..."9", "A"..."Z", "a"..."z", ".", "-", "_", ":": return true
        default: return false
        }
    }
}
