#if canImport(Glibc)
import Glibc
#endif

/// A structured logger writing one line per record to standard error:
/// `<UTC time> <LEVEL> <process> <message> key=value ...`. Keys are stable (`message.code`,
/// `worker.id`, `http.status`) so that logs can be searched. Never pass push tokens or API tokens
/// as values; use `Redact.token` for anything that identifies a secret.
public struct Logger: Sendable {
    public let label: String
    public let level: LogLevel

    public init(label: String, level: LogLevel) {
        self.label = label
        self.level = level
    }

    public func error(_ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.error, message(), metadata)
    }
    public func warning(_ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.warning, message(), metadata)
    }
    public func info(_ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.info, message(), metadata)
    }
    public func debug(_ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.debug, message(), metadata)
    }
    public func verbose(_ message: @autoclosure () -> String, _ metadata: KeyValuePairs<String, String> = [:]) {
        log(.verbose, message(), metadata)
    }

    public func isEnabled(_ candidate: LogLevel) -> Bool { candidate != .none && candidate <= level }

    public func log(_ candidate: LogLevel, _ message: @autoclosure () -> String,
                    _ metadata: KeyValuePairs<String, String> = [:]) {
        guard isEnabled(candidate) else { return }
        emit(candidate, message(), metadata)
    }

    /// `log` with pairs put together at run time.
    public func log(_ candidate: LogLevel, _ message: @autoclosure () -> String, _ metadata: [(key: String, value: String)]) {
        guard isEnabled(candidate) else { return }
        emit(candidate, message(), metadata)
    }

    private func emit<Pairs: Sequence>(_ candidate: LogLevel, _ message: String, _ metadata: Pairs)
    where Pairs.Element == (key: String, value: String) {
        var line = "\(Self.timestamp()) \(candidate.name) \(label) \(message)"
        for (key, value) in metadata {
            line += " \(key)=\(Self.quoted(value))"
        }
        line += "\n"
        line.withCString { _ = write(STDERR_FILENO, $0, strlen($0)) }
    }

    /// The longest value a log line carries (longer ones are cut, marked with `…`), so that no peer
    /// or request can make a line grow without bound.
    static let maxValueLength = 1024

    static func quoted(_ value: String) -> String {
        let value = value.count > maxValueLength ? String(value.prefix(maxValueLength)) + "…" : value
        if !value.isEmpty && !value.contains(where: { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }) {
            return value
        }
        return "\"" + value.replacingAll("\\", with: "\\\\").replacingAll("\"", with: "\\\"")
            .replacingAll("\n", with: "\\n") + "\""
    }

    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var parts = tm()
        var seconds = now.tv_sec
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2))."
            + "\(pad(Int32(now.tv_nsec / 1_000_000), 3))Z"
    }
}

/// Helpers that keep secrets out of logs and error text.
public enum Redact {
    /// The first six characters of a token followed by an ellipsis: enough to correlate, not to use.
    public static func token(_ value: String) -> String {
        value.count <= 6 ? "…" : String(value.prefix(6)) + "…"
    }
}

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
