import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The `Date` header line for responses (RFC 9110 IMF-fixdate), formatted once per second and
/// shared by every thread that answers.
final class HTTPDate: Sendable {
    static let shared = HTTPDate()

    private let line = Mutex<(second: Int, bytes: [UInt8])>((-1, []))

    /// Appends `Date: <now>\r\n`.
    func append(to bytes: inout [UInt8]) {
        let now = time(nil)
        let current = line.withLock { line -> [UInt8] in
            if line.second != now {
                line = (now, Self.format(now))
            }
            return line.bytes
        }
        current.withUnsafeBufferPointer { bytes.append(contentsOf: $0) }
    }

    private static func format(_ seconds: Int) -> [UInt8] {
        var clock = seconds
        var parts = tm()
        gmtime_r(&clock, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let text = "Date: \(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT\r\n"
        return Array(text.utf8)
    }
}
