import Foundation

/// A process's CPU time, resident memory and start time, as Prometheus's `process_*` metrics give
/// them, read from Linux's `/proc` (zero where a file cannot be read).
public struct ProcessFigures: Codable, Sendable, Equatable {
    /// User and system CPU time, in seconds.
    public var cpuSeconds: Double
    /// Resident set, in bytes.
    public var residentBytes: Int64
    /// When the process started, in seconds since the Unix epoch.
    public var startTimeSeconds: Double

    public init(cpuSeconds: Double, residentBytes: Int64, startTimeSeconds: Double) {
        (self.cpuSeconds, self.residentBytes, self.startTimeSeconds) = (cpuSeconds, residentBytes, startTimeSeconds)
    }

    var isValid: Bool {
        cpuSeconds >= 0 && cpuSeconds.isFinite && residentBytes >= 0 && startTimeSeconds >= 0 && startTimeSeconds.isFinite
    }

    /// This process's figures now.
    public static func current() -> ProcessFigures {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let stat = (try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8)) ?? ""
        // Fields after the command name (in parentheses, which may hold spaces): state is field 3.
        let fields = stat.split(separator: ")").last.map { $0.split(separator: " ") } ?? []
        func field(_ number: Int) -> Double { fields.count > number - 3 ? Double(fields[number - 3]) ?? 0 : 0 }
        let cpu = ticks > 0 ? (field(14) + field(15)) / ticks : 0
        let started = ticks > 0 ? bootTime() + field(22) / ticks : 0
        return ProcessFigures(cpuSeconds: cpu, residentBytes: residentBytes(), startTimeSeconds: started)
    }

    /// This process's resident set in bytes, from `/proc/self/statm`.
    public static func residentBytes() -> Int64 {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = statm.split(separator: " ")
        guard fields.count > 1, let pages = Int64(fields[1]) else { return 0 }
        return pages * Int64(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// The boot time in seconds since the epoch (`btime` in `/proc/stat`).
    static func bootTime() -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
              let line = stat.split(separator: "\n").first(where: { $0.hasPrefix("btime ") }) else { return 0 }
        return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces)) ?? 0
    }
}
