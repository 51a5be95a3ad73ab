/// Log levels, named as the Pushwoosh SDKs name theirs. A logger at level L prints L and everything
/// more severe; `NONE` prints nothing.
public enum LogLevel: Int, Sendable, Comparable, CaseIterable {
    case none = 0
    case error
    case warning
    case info
    case debug
    case verbose

    public init?(name: String) {
        switch name.uppercased() {
        case "NONE": self = .none
        case "ERROR": self = .error
        case "WARNING", "WARN": self = .warning
        case "INFO": self = .info
        case "DEBUG": self = .debug
        case "VERBOSE": self = .verbose
        default: return nil
        }
    }

    public var name: String {
        switch self {
        case .none: return "NONE"
        case .error: return "ERROR"
        case .warning: return "WARNING"
        case .info: return "INFO"
        case .debug: return "DEBUG"
        case .verbose: return "VERBOSE"
        }
    }

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}
