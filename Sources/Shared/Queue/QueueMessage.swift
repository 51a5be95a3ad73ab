/// Messages on the results channel (worker → ingest), one JSON frame each.
public enum QueueMessage: Sendable, Equatable {
    /// Sent by each worker every second: who it is and how busy it is.
    case heartbeat(worker: String, pid: Int64, jobsInFlight: Int64)

    public var encoded: [UInt8] {
        switch self {
        case .heartbeat(let worker, let pid, let jobs):
            return JSON.object(["type": "heartbeat", "worker": .string(worker), "pid": .int(pid),
                                "jobs_in_flight": .int(jobs)]).encoded()
        }
    }

    /// Decodes one frame; nil for anything malformed (logged by the caller, never fatal).
    public static func decode(_ frame: [UInt8]) -> QueueMessage? {
        guard let json = try? JSON.parse(frame), let type = json["type"]?.stringValue else { return nil }
        switch type {
        case "heartbeat":
            guard let worker = json["worker"]?.stringValue, let pid = json["pid"]?.lenientInt else { return nil }
            return .heartbeat(worker: worker, pid: pid, jobsInFlight: json["jobs_in_flight"]?.lenientInt ?? 0)
        default:
            return nil
        }
    }
}
