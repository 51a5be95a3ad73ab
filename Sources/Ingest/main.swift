import Foundation
import BuildInfo
import Core
import HTTPServer
import Queue
import Storage
import WebPush

// herald-ingest: the HTTP surface, the device registry writes and the work queue.

let (configuration, logger, _) = Startup.configure(
    executable: "herald-ingest",
    version: BuildInfo.description,
    summary: "accepts Device API, Remote API and OneSignal helper requests and hands work to herald-worker processes.",
    generateCurveKey: { try CurveKeys.generate(writingSecretTo: $0) },
    backup: { configuration, destination in
        let bytes = try Storage.open(configuration).backup(to: destination)
        return "backup of \(configuration.database.location.value) written to \(destination) (\(bytes) bytes)"
    },
    generateVAPIDKey: { path in
        let key = try P256Key.generate()
        try key.write(toNewFile: path)
        return Base64URL.encode(key.publicKey)
    },
    validate: { configuration throws(ConfigurationError) in try configuration.queue.checkIngest() })

let applicationServerKeys: ApplicationServerKeys
do {
    applicationServerKeys = try ApplicationServerKeys(apps: configuration.apps)
} catch {
    FileHandle.standardError.write(Data("herald-ingest: configuration error: \(error)\n".utf8))
    exit(2)
}

let backend: any StoreBackend
// Every time ingest writes or compares goes by the database's clock (PostgreSQL: the server's).
let clock: any Clock
do {
    backend = try Storage.open(configuration, logger: logger)
    clock = try backend.makeClock(logger: logger)
} catch {
    let location = configuration.database.location
    logger.error("cannot open the database", [location.key: location.value, "error": "\(error)"])
    exit(1)
}

let store = backend.devices
let campaigns = backend.campaigns
let analytics = backend.analytics
let queueContext = QueueContext()
// With CURVE, the ZAP handler must be in place before the queue endpoints bind.
let authenticator = configuration.queue.curve.map { CurveAuthenticator(keys: $0.authorizedKeys, logger: logger) }
do {
    try authenticator?.start(context: queueContext)
} catch {
    logger.error("cannot start the CURVE authenticator", ["error": "\(error)"])
    exit(1)
}
let identity = ProcessIdentity.draw(hostName: ProcessInfo.processInfo.hostName, pid: getpid())
let workers = Dispatcher(id: identity.id, settings: configuration.queue,
                         retention: configuration.retention, campaigns: campaigns, bulkTags: store, analytics: analytics, clock: clock,
                         logger: logger)
do {
    try workers.start(context: queueContext)
} catch {
    logger.error("cannot bind the queue endpoints", ["error": "\(error)"])
    exit(1)
}

let bulkTags = BulkTagRunner(store: store, clock: clock, logger: logger, isDispatching: { workers.isDispatching })
bulkTags.start()

let metrics = Metrics(storeMemory: { backend.clientMemoryBytes }, usesPostgres: configuration.database.url != nil)
let router = Router(configuration: configuration, backend: backend, applicationServerKeys: applicationServerKeys, clock: clock,
                    workers: workers, metrics: metrics, logger: logger,
                    onMessageCreated: { workers.nudge() }, onBulkJobCreated: { bulkTags.nudge() })
// One line per failure burst, and one when commits succeed again.
let databaseLocation = configuration.database.location
backend.watchCommits { failure in
    if let failure {
        logger.error("database commits are failing; writes get 503 until they succeed",
                     [databaseLocation.key: databaseLocation.value, "error": failure])
    } else {
        logger.info("database commits succeed again", [databaseLocation.key: databaseLocation.value])
    }
}
// Writes run on the database writer thread, many requests per commit; each is answered after its commit.
// Bulk bodies (up to `http.bulk_max_body_bytes` of JSON, seconds to parse) are parsed one at a time on
// a queue of their own, so that the I/O thread goes on serving its other connections meanwhile.
// Reads run inline on the I/O thread, except where each is a round trip to the server (PostgreSQL):
// there they run on the store's reader threads, and the I/O thread goes on serving meanwhile; a
// getTags by hwid waits on no thread at all (its answer comes from the thread that read it).
let bulkParsing = DispatchQueue(label: "herald-bulk-parse")
let readsWait = backend.readsWait
let server = HTTPServer(
    settings: configuration.http, classify: { request in readsWait ? .offload : Router.dispatch(request) },
    offload: { request, respond in
        let started = monotonicSeconds()
        // Where reads do not wait, `classify` already sent every read inline: what comes here writes.
        if readsWait, case .inline = Router.dispatch(request) {
            if router.answerWithoutWaiting(request, started: started, respond: { respond($0) }) { return }
            backend.submitRead({ router.handle(request, started: started) }, completion: { respond($0) })
            return
        }
        let submit: @Sendable () -> Void = {
            let (route, work) = router.route(request)
            let method = request.method
            backend.submitRequest(work,
                                   onFailure: { (Envelope.failure(503, "the database could not commit; please retry"), 503) },
                                   completion: { response, code in
                                       // Counted, and the request's data freed, on the I/O thread: the
                                       // writer thread that commits the request only queues this.
                                       respond.making {
                                           withExtendedLifetime(work) {}
                                           router.counted(method: method, route: route, response: response, code: code, started: started)
                                           return response
                                       }
                                   })
        }
        if request.path == AudienceAPI.path { bulkParsing.async(execute: submit) } else { submit() }
    },
    bodyLimit: { [maxZip = configuration.richMedia.maxZipBytes, maxBulk = configuration.http.bulkMaxBodyBytes,
                  maxBody = configuration.http.maxBodyBytes] method, path in
        if RichMediaAPI.isUpload(method: method, path: path) { return maxZip }
        return method == "POST" && path == AudienceAPI.path ? maxBulk : maxBody
    },
    refusal: Envelope.refusal,
    counters: metrics.connections,
    handler: { router.handle($0) })
do {
    try server.start()
} catch {
    logger.error("cannot start the HTTP server", ["error": "\(error)"])
    exit(1)
}
var listening = configuration.http
listening.port = server.port
logger.info("listening", ["http.listen": listening.listen,
                          "apps": configuration.apps.map(\.code).joined(separator: ",")])

let signal = Signals.waitForTermination(onHangup: {
    // SIGHUP re-reads the workers' keys; a bad file keeps the keys in force.
    guard let authenticator, let curve = configuration.queue.curve, let path = curve.authorizedKeysFile else { return }
    do {
        let keys = try CurveSettings.readAuthorizedKeys(path: path, key: "queue.curve.authorized_keys_file")
        authenticator.replace(keys)
        logger.info("authorized worker keys re-read", ["queue.curve.authorized_keys_file": path, "keys": String(keys.count)])
    } catch {
        logger.error("authorized worker keys not re-read; the previous ones stay in force", ["error": "\(error)"])
    }
})
logger.info("shutting down", ["signal": String(signal)])
server.stop()
bulkTags.stop()
workers.stop()
authenticator?.stop()
queueContext.terminate()
logger.info("stopped")
exit(0)
