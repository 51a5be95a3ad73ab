import Foundation

/// Herald's configuration, read once from the JSON file that both `herald-ingest` and
/// `herald-worker` take (`--config FILE` or `HERALD_CONFIG`). Every key is documented in
/// `docs/configuration.md`; every field has a safe default except the applications.
public struct Configuration: Sendable {
    public var logLevel: LogLevel = .info
    public var http = HTTPSettings()
    public var database = DatabaseSettings(path: "var/herald.sqlite")
    public var queue = QueueSettings()
    public var throttle = ThrottleSettings()
    public var delivery = DeliverySettings()
    public var retention = RetentionSettings()
    public var richMedia = RichMediaSettings()
    public var apps: [AppConfiguration] = []

    public init() {}

    /// The application with this code, if configured.
    public func app(code: String) -> AppConfiguration? { apps.first { $0.code == code } }
}

/// `http`: where ingest listens and how much it accepts.
public struct HTTPSettings: Sendable {
    /// `http.listen`: `host:port`, with an IPv4 literal or a bracketed IPv6 literal (`[::1]:8080`).
    public var host = "127.0.0.1"
    public var port: UInt16 = 8080
    /// `http.max_body_bytes`: larger bodies get HTTP 413.
    public var maxBodyBytes = 1_048_576
    /// `http.bulk_max_body_bytes`: the body limit of bulk routes (`POST /api/v2/audience/bulkSetTags`).
    public var bulkMaxBodyBytes = 67_108_864
    /// `http.threads`: I/O threads (each runs its own epoll loop and answers reads inline; writes
    /// are handed to the database writer, and their answers come back to the loop).
    public var threads = 4
    /// `http.connection_limit`: concurrent connections. A new one beyond it takes the place of the
    /// oldest connection still waiting for its headers, or, when every slot holds a request in
    /// progress, gets 503 with `Retry-After`.
    public var connectionLimit = 4096
    /// `http.idle_timeout_seconds`: connections that send nothing are closed after this; a
    /// kept-alive connection must complete its next request's headers within the longer of this
    /// and `headerTimeoutSeconds`.
    public var idleTimeoutSeconds = 60
    /// `http.header_timeout_seconds`: a new connection must complete its request line and headers
    /// within this, however it trickles them.
    public var headerTimeoutSeconds = 20
    /// `http.body_timeout_seconds`: the body must arrive within this of the headers, plus one second
    /// per `bodyMinBytesPerSecond` bytes received.
    public var bodyTimeoutSeconds = 20
    /// `http.body_min_bytes_per_second`: the rate that keeps extending the body deadline.
    public var bodyMinBytesPerSecond = 500
    /// `http.public_url`: the address clients use to reach Herald (usually a TLS proxy's), such as
    /// `https://push.example.com`; the dashboard's origin check and cookie follow it.
    public var publicURL: String?
    /// `http.onesignal.add_device_path` / `edit_device_path`: the OneSignal helper's routes.
    public var oneSignalAddDevicePath = "/onesignal/adddevice"
    public var oneSignalEditDevicePath = "/onesignal/editdevice"

    public init() {}

    public var listen: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// `database`: the store shared by ingest and workers: a SQLite file (`path`, the default) or a
/// PostgreSQL database (`url`). At most one of the two may be set.
public struct DatabaseSettings: Sendable {
    /// `database.path`, resolved against the configuration file's folder.
    public var path: String
    /// `database.url`: a libpq URI (`postgresql://user:pass@host:port/db?param=value`); when set,
    /// Herald uses PostgreSQL instead of the SQLite file.
    public var url: String?
    /// `database.password_file`: a file holding the PostgreSQL password (trailing newlines are
    /// dropped), resolved against the configuration file's folder. libpq also reads `PGPASSWORD`.
    public var passwordFile: String?
    /// `database.pool_size`: PostgreSQL connections per process at most.
    public var poolSize = 8
    /// `database.busy_timeout_ms`: how long a writer waits for the SQLite lock, or a call for a free
    /// PostgreSQL connection, before failing (HTTP 503).
    public var busyTimeoutMilliseconds = 5000
    /// `database.statement_timeout_ms`: PostgreSQL only. The server cancels a statement that runs
    /// longer, and Herald stops waiting for an answer a second after that (a frozen server, a silent
    /// network) and drops the connection; either way the call fails as retryable (HTTP 503).
    public var statementTimeoutMilliseconds = 15000
    /// `database.synchronous`: `full` (the default) syncs every group commit to disk, so an
    /// acknowledged write survives power loss; `normal` survives process crashes only.
    public var synchronousFull = true
    /// `database.cache_mb`: the SQLite writer's page cache in MiB. It fills as the database grows
    /// and then stays at this bound; each reading connection keeps up to 8 MiB more.
    public var cacheMiB = 64

    public init(path: String) { self.path = path }
}

/// `queue`: the ZeroMQ endpoints ingest binds and workers connect to.
public struct QueueSettings: Sendable {
    /// `queue.jobs`: ingest → workers (ROUTER ↔ DEALER). Ingest binds its one endpoint; a worker
    /// connects to every ingest's, in the same order as `results`.
    public var jobs = ["tcp://127.0.0.1:5557"]
    /// `queue.results`: workers → ingest (PUSH → PULL): acks, results, heartbeats (sent to every ingest).
    public var results = ["tcp://127.0.0.1:5558"]
    /// `queue.curve`: CURVE keys; nil means plain TCP (loopback only, unless `allowInsecureRemote`).
    public var curve: CurveSettings?
    /// `queue.allow_insecure_remote`: let ingest listen beyond loopback without CURVE.
    public var allowInsecureRemote = false

    public init() {}
}

/// `throttle`: frequency caps.
public struct ThrottleSettings: Sendable {
    /// `throttle.per_device.count` pushes per `throttle.per_device.window_seconds` at most, per device.
    public var perDeviceCount = 10
    public var perDeviceWindowSeconds = 3600

    public init() {}
}

/// `delivery`: how workers ride out provider trouble.
public struct DeliverySettings: Sendable {
    /// `delivery.default_ttl_seconds`: how long a push that failed for a transient reason is retried
    /// when its message sets no `ios_ttl` / `android_gcm_ttl`.
    public var defaultTTLSeconds: Int64 = 3600
    /// `delivery.max_in_flight`: pushes a worker keeps unrecorded per app at once, at most (on the
    /// network and waiting for a stream). The window it uses is each provider's connections times the
    /// streams its servers announce, with two batches waiting, capped by this; it is also the most a
    /// killed worker can leave ambiguous.
    public var maxInFlight = 4000

    public init() {}
}

/// `retention`: how long raw rows are kept. Counts outlive them: the per-day rollups keep what the
/// reports added up to, and the message funnels keep their totals.
public struct RetentionSettings: Sendable {
    /// `retention.reports_days` (a number of days, fractions allowed), in seconds: processed SDK
    /// reports older than this are deleted.
    public var reportsSeconds: Int64 = 90 * 86_400
    /// `retention.deliveries_days`, in seconds: delivery rows of messages finished longer ago than
    /// this are deleted.
    public var deliveriesSeconds: Int64 = 90 * 86_400
    /// `retention.bulk_jobs_days`, in seconds: finished bulkSetTags jobs (their status and errors)
    /// last updated longer ago than this are deleted.
    public var bulkJobsSeconds: Int64 = 30 * 86_400

    public init() {}
}

/// `rich_media`: the pages Herald hosts for rich media pushes and in-apps.
public struct RichMediaSettings: Sendable {
    /// `rich_media.max_zip_bytes`: the largest zip an upload may send (larger ones get HTTP 413);
    /// its entries may unpack to 10 times as much.
    public var maxZipBytes = 5_242_880

    public init() {}
}

/// One entry of `apps`: an application whose devices Herald serves.
public struct AppConfiguration: Sendable {
    /// `code`: the Pushwoosh application code (`XXXXX-XXXXX`) the SDKs send as `application`.
    public var code: String
    public var name: String
    /// `api_token`: the secret that Remote API calls present (`auth` or `Authorization: Token`).
    public var apiToken: String
    public var apns: APNsSettings?
    public var fcm: FCMSettings?
    /// `huawei`: Huawei Push Kit, for devices of `device_type` 17.
    public var huawei: HuaweiSettings?
    /// `web`: Web Push (VAPID) for browsers subscribed through the Pushwoosh Web SDK.
    public var web: WebPushSettings?
    /// `sink`: a JSON-lines file that receives every push instead of APNs/FCM (it wins when both are set).
    public var sink: String?
    /// `tags`: tag types declared up front (name → type). Other tags take the type of their first
    /// value; a `version` tag can only be declared here.
    public var tagTypes: [String: TagType] = [:]

    public init(code: String, name: String, apiToken: String, apns: APNsSettings? = nil, fcm: FCMSettings? = nil,
                sink: String? = nil) {
        self.code = code
        self.name = name
        self.apiToken = apiToken
        self.apns = apns
        self.fcm = fcm
        self.sink = sink
    }
}

/// `apps[].apns`: token-based APNs credentials and hosts.
public struct APNsSettings: Sendable {
    public var teamID: String
    public var keyID: String
    /// `key_path`: the `.p8` signing key, resolved against the configuration file's folder.
    public var keyPath: String
    public var topic: String
    public var productionURL = "https://api.push.apple.com"
    public var sandboxURL = "https://api.sandbox.push.apple.com"
    /// `ca_file`: an extra trusted CA (PEM), for tests against a mock.
    public var caFile: String?
    /// `connections`: HTTP/2 connections a worker keeps to each APNs host.
    public var connections = APNsSettings.defaultConnections
    public static let defaultConnections = 2
}

/// `apps[].web`: the application server's VAPID identity (RFC 8292) toward browsers' push services.
public struct WebPushSettings: Sendable {
    /// `vapid_private_key_file`: a PEM P-256 private key (`openssl ecparam -name prime256v1 -genkey`, or
    /// `herald-ingest --generate-vapid-key`), resolved against the configuration file's folder. Its
    /// public key is the `applicationServerKey` browsers subscribe with.
    public var vapidPrivateKeyFile: String
    /// `subject`: how a push service reaches the operator, a `mailto:` or `https:` URI (the JWT's `sub`).
    public var subject: String
    /// `ca_file`: an extra trusted CA (PEM) for push services, for tests against a mock.
    public var caFile: String?
    /// `connections`: HTTP/2 connections a worker keeps to each push service.
    public var connections = WebPushSettings.defaultConnections
    public static let defaultConnections = 2
    /// `allow_private_endpoints`: accept subscription endpoints on this host or a private network
    /// (`IPAddress.isPrivate`, `localhost`). Off, registerDevice refuses them and workers do not
    /// connect to a push service whose name resolves to such an address. Tests and mocks turn it on.
    public var allowsPrivateEndpoints = false

    public init(vapidPrivateKeyFile: String, subject: String) {
        self.vapidPrivateKeyFile = vapidPrivateKeyFile
        self.subject = subject
    }
}

/// `apps[].fcm`: FCM HTTP v1 credentials.
public struct FCMSettings: Sendable {
    /// `service_account_path`: a Google service-account JSON file.
    public var serviceAccountPath: String
    public var endpoint = "https://fcm.googleapis.com"
    /// `ca_file`: an extra trusted CA (PEM) for the endpoint and token URI, for tests against a mock.
    public var caFile: String?
    /// `connections`: HTTP/2 connections a worker keeps to the FCM endpoint.
    public var connections = FCMSettings.defaultConnections
    public static let defaultConnections = 4
}
