/// Why a store call failed, in terms every backend shares. The first three are the caller's
/// mistakes (answered 210 or 4xx); `backend` is the database's own failure; `deferred` is no
/// failure at all.
public enum StoreError: Error, Sendable, CustomStringConvertible {
    case unknownApplication(String)
    case unknownDevice(String)
    /// The request is invalid for the stored state (message names the field).
    case invalid(String)
    case backend(BackendFailure)
    /// The backend stopped the call before it reached the database, because the request runs again
    /// on a thread that may block (PostgreSQL's batching, `StoreBackend.submitRequest`): this run's
    /// result is discarded, so nothing is logged or answered for it.
    case deferred

    public var description: String {
        switch self {
        case .unknownApplication(let code): return "application \(code) not found"
        case .unknownDevice: return "device not found"
        case .invalid(let message): return message
        case .backend(let failure): return failure.description
        case .deferred: return "the request runs again on another thread"
        }
    }
}

/// A failure of the database behind a store, with the backend's own code kept as data.
public struct BackendFailure: Error, Sendable, CustomStringConvertible {
    /// Which backend failed, as it names itself in logs and metrics (`sqlite`).
    public let backend: String
    /// The backend's own error code (SQLite's extended result code).
    public let code: Int64
    public let message: String
    /// What Herald was doing; never the bound values, which may hold tokens.
    public let context: String
    /// True when the same call may succeed later (the database was busy or locked), so that the
    /// client is told to retry (503) rather than that the server failed (500).
    public let isRetryable: Bool

    public init(backend: String, code: Int64, message: String, context: String, isRetryable: Bool) {
        self.backend = backend
        self.code = code
        self.message = message
        self.context = context
        self.isRetryable = isRetryable
    }

    public var description: String { "\(backend) error \(code) (\(message)) while \(context)" }
}
