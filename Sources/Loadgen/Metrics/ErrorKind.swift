import SDKClient

/// Why a request failed, as counted and shown: never swallowed, one count per request.
enum ErrorKind: Hashable, Comparable, CustomStringConvertible {
    /// Nothing listens at the target (ECONNREFUSED).
    case connectionRefused
    /// The server closed or reset the connection before the reply was complete.
    case connectionClosed
    /// Another socket error (unreachable, no address, out of descriptors…).
    case connectionFailed
    /// The TLS handshake failed (certificate, name, protocol).
    case tls
    /// No reply (or no connection) within `--timeout`.
    case timeout
    /// The bytes that came back are not an HTTP response.
    case badHTTP
    /// HTTP status other than 200.
    case http(Int)
    /// HTTP 200 whose body is not a JSON object.
    case nonJSON
    /// A Pushwoosh envelope without an integer `status_code`.
    case missingStatusCode
    /// A Pushwoosh envelope whose `status_code` is not 200 (210: the server refused an argument).
    case statusCode(Int)
    /// A OneSignal helper reply whose `status` is not 1.
    case oneSignalStatus(Int)
    /// adddevice answered without a `player_id`.
    case missingPlayerID

    /// The key in the JSON results and the report: `connection_refused`, `http_503`, `status_code_210`…
    var description: String {
        switch self {
        case .connectionRefused: return "connection_refused"
        case .connectionClosed: return "connection_closed"
        case .connectionFailed: return "connection_failed"
        case .tls: return "tls"
        case .timeout: return "timeout"
        case .badHTTP: return "bad_http"
        case .http(let status): return "http_\(status)"
        case .nonJSON: return "non_json"
        case .missingStatusCode: return "status_code_missing"
        case .statusCode(let code): return "status_code_\(code)"
        case .oneSignalStatus(let status): return "status_\(status)"
        case .missingPlayerID: return "player_id_missing"
        }
    }

    /// What a person reads in the summary.
    var explanation: String {
        switch self {
        case .connectionRefused: return "connection refused (is the target running?)"
        case .connectionClosed: return "connection closed before the reply was complete"
        case .connectionFailed: return "connection failed"
        case .tls: return "TLS handshake failed"
        case .timeout: return "no reply within --timeout"
        case .badHTTP: return "reply is not HTTP"
        case .http(let status) where status >= 500: return "HTTP \(status) (server error)"
        case .http(let status): return "HTTP \(status)"
        case .nonJSON: return "HTTP 200 but the body is not a JSON object"
        case .missingStatusCode: return "JSON reply without status_code"
        case .statusCode(210): return "status_code 210 (argument error)"
        case .statusCode(let code): return "status_code \(code)"
        case .oneSignalStatus(let status): return "OneSignal status \(status)"
        case .missingPlayerID: return "adddevice reply without player_id"
        }
    }

    /// The kind a `description` names (as a results file carries it), or nil.
    init?(description: String) {
        let plain: [ErrorKind] = [.connectionRefused, .connectionClosed, .connectionFailed, .tls, .timeout, .badHTTP, .nonJSON,
                                  .missingStatusCode, .missingPlayerID]
        if let kind = plain.first(where: { $0.description == description }) {
            self = kind
            return
        }
        for (prefix, make) in [("http_", ErrorKind.http), ("status_code_", ErrorKind.statusCode), ("status_", ErrorKind.oneSignalStatus)] {
            if description.hasPrefix(prefix), let number = Int(description.dropFirst(prefix.count)) {
                self = make(number)
                return
            }
        }
        return nil
    }

    static func < (lhs: ErrorKind, rhs: ErrorKind) -> Bool { lhs.description < rhs.description }

    init(_ failure: ClientSocket.Failure) {
        switch failure.kind {
        case .refused: self = .connectionRefused
        case .reset: self = .connectionClosed
        case .tls: self = .tls
        case .other: self = .connectionFailed
        }
    }
}
