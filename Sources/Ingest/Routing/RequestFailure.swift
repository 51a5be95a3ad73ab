import Core

/// What an error thrown while answering a request means for the client, decided once for every
/// route; each API then words it in its own reply shape (the Pushwoosh envelope, the OneSignal
/// helper's `{"status": 0}`). Server-side failures are logged here, without request values.
enum RequestFailure {
    /// The API token did not match (403).
    case accessDenied
    /// The client's mistake, naming the field.
    case argument(String)
    case unknownApplication(String)
    case unknownDevice
    /// Herald's own failure: 503 when a retry may succeed (the database was busy), else 500.
    case server(status: Int)

    init(_ error: any Error, route: String, logger: Logger) {
        switch error {
        case is RemoteAPI.AccessDenied: self = .accessDenied
        case let error as ArgumentError: self = .argument(error.message)
        case let error as StoreError:
            switch error {
            case .unknownApplication(let code): self = .unknownApplication(String(code.prefix(64)))
            case .unknownDevice: self = .unknownDevice
            case .invalid(let message): self = .argument(message)
            case .backend(let cause):
                logger.error("database error", ["http.route": route, cause.backend + ".code": String(cause.code),
                                                "error": cause.message])
                self = .server(status: cause.isRetryable ? 503 : 500)
            case .deferred:
                // Never reaches a client: the request's result from this run is discarded.
                self = .server(status: 503)
            }
        default:
            logger.error("unexpected error", ["http.route": route, "error": "\(error)"])
            self = .server(status: 500)
        }
    }
}
