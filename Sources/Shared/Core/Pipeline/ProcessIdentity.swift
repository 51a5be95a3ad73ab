/// How a Herald process names itself: the host it runs on (shown on `/metrics` and the dashboard)
/// and its id, `<host>-<pid>-<4 hex digits>`. The hex digits are drawn at start, so two containers
/// with the same host name and pid still get different ids. A worker's id is its DEALER identity on
/// the queue and the holder of its shard leases; an ingest's is its name in the dispatcher role
/// (`/healthz`, `/metrics`, the dashboard).
public struct ProcessIdentity: Sendable, Equatable {
    /// The host name as a worker id can carry it (`QueueMessage.isWorkerID`).
    public let host: String
    public let id: String

    /// The longest host name kept (Linux allows 64 characters), so that the id stays within 200.
    static let maximumHostLength = 100

    /// - Parameter hostName: the machine's name; each character a worker id cannot hold becomes
    ///   `_`, and it is cut to 100 characters (an empty name becomes `unknown`).
    /// - Parameter tag: the number written as the id's last 4 hex digits.
    public init(hostName: String, pid: Int32, tag: UInt16) {
        let kept = String(String.UnicodeScalarView(hostName.unicodeScalars.prefix(Self.maximumHostLength).map { scalar in
            QueueMessage.isNameCharacter(scalar) ? scalar : "_"
        }))
        host = kept.isEmpty ? "unknown" : kept
        let hex = String(tag, radix: 16)
        id = "\(host)-\(pid)-\(String(repeating: "0", count: 4 - hex.count))\(hex)"
    }

    /// A worker's name when `--name` does not give one: the host, and the instance of the systemd
    /// template unit it runs in (`herald-worker@2.service` on vm-7 is `vm-7-2`), read from
    /// `cgroup` (the text of `/proc/self/cgroup`); just the host outside such a unit. Characters a
    /// worker id cannot hold become `_`.
    public static func defaultName(host: String, cgroup: String?) -> String {
        let unit = cgroup?.split(separator: "\n").compactMap { $0.split(separator: "/").last }.first { $0.hasSuffix(".service") }
        guard let unit, let at = unit.firstIndex(of: "@") else { return host }
        let instance = unit[unit.index(after: at)...].dropLast(".service".count)
        guard !instance.isEmpty else { return host }
        // A worker id holds 200 characters: the host, a dash and as much of the instance as fits.
        let room = max(0, 199 - host.unicodeScalars.count)
        guard room > 0 else { return host }
        let safe = String(String.UnicodeScalarView(instance.unicodeScalars.prefix(room).map { scalar in
            QueueMessage.isNameCharacter(scalar) ? scalar : "_"
        }))
        return "\(host)-\(safe)"
    }

    /// The identity of a process starting now, with a random tag.
    public static func draw(hostName: String, pid: Int32) -> ProcessIdentity {
        ProcessIdentity(hostName: hostName, pid: pid, tag: .random(in: 0...UInt16.max))
    }
}
