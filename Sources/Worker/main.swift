import Foundation
import BuildInfo
import Core
import Delivery
import Queue
import Storage

// herald-worker: connects to ingest's queue endpoints and does the work ingest hands out.

let (configuration, logger, givenName) = Startup.configure(
    executable: "herald-worker",
    version: BuildInfo.description,
    summary: "resolves campaign targets, throttles, delivers through APNs/FCM and records results; start as many as needed.",
    generateCurveKey: { try CurveKeys.generate(writingSecretTo: $0) },
    takesName: true,
    validate: { configuration throws(ConfigurationError) in try configuration.queue.checkWorker() })

let identity = ProcessIdentity.draw(hostName: ProcessInfo.processInfo.hostName, pid: getpid())
let workerID = identity.id
let workerName = givenName ?? ProcessIdentity.defaultName(host: identity.host, cgroup: try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8))

let backend: any StoreBackend
// Leases, retries and deliveries go by the database's clock (PostgreSQL: the server's), which the
// ingests share; provider tokens by this host's, which Apple and Google check against theirs.
let clock: any Clock
// A worker never creates the database: ingest does. It waits a few seconds for the SQLite file (ingest
// and workers may start at the same instant on a new host), then stops: a file that is still not there
// means ingest is not running on this host, or keeps its data elsewhere (PostgreSQL, for a worker on
// another host), and working on a new empty file would leave every campaign unsent.
if configuration.database.url == nil {
    let path = configuration.database.path
    let deadline = monotonicSeconds() + 10
    var waiting = false
    while !FileManager.default.fileExists(atPath: path) {
        guard monotonicSeconds() < deadline else {
            logger.error("the database does not exist; a worker opens the one ingest creates and never creates one: start herald-ingest "
                + "first, and on a host of its own set database.url to ingest's PostgreSQL database (docs/deploy.md)",
                ["database.path": path])
            exit(1)
        }
        if !waiting {
            logger.info("waiting up to 10 s for ingest to create the database", ["database.path": path])
            waiting = true
        }
        usleep(100_000)
    }
}
do {
    backend = try Storage.open(configuration, logger: logger)
    clock = try backend.makeClock(logger: logger)
} catch {
    let location = configuration.database.location
    logger.error("cannot open the database", [location.key: location.value, "error": "\(error)"])
    exit(1)
}

let stats = DeliveryStats()
let providers: Providers
do {
    providers = try Providers(apps: configuration.apps, delivery: configuration.delivery, clock: SystemClock(), logger: logger, stats: stats)
} catch {
    // A key file that is missing or unreadable is a configuration error: exit 2, which the units do not restart.
    logger.error("cannot set up delivery: check the app's apns.key_path, fcm.service_account_path, huawei.client_secret_file or sink",
                 ["app": error.app, "error": error.cause])
    exit(2)
}

let runner = ShardRunner(
    store: backend.campaigns, providers: providers.byApp, throttle: configuration.throttle,
    retryPolicy: RetryPolicy(defaultTTL: configuration.delivery.defaultTTLSeconds), clock: clock, logger: logger, workerID: workerID,
    batchSize: Pipeline.deliveryBatchSize, leaseSeconds: Pipeline.leaseSeconds, stats: stats,
    windows: ShardRunner.windows(for: providers.byApp, batchSize: Pipeline.deliveryBatchSize, maxUnrecorded: configuration.delivery.maxInFlight))
let context = QueueContext()
let worker = WorkerLoop(configuration: configuration, logger: logger, id: workerID, name: workerName, host: identity.host, runner: runner,
                        analytics: backend.analytics, clock: clock, stats: stats)
do {
    try worker.start(context: context)
} catch {
    logger.error("cannot connect to the queue", ["error": "\(error)"])
    exit(1)
}

let signal = Signals.waitForTermination()
logger.info("draining and stopping", ["signal": String(signal)])
worker.stop()
providers.close()
context.terminate()
logger.info("stopped")
exit(0)
