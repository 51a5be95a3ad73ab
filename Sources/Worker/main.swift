import Foundation
import Shared

// herald-worker: connects to ingest's queue endpoints and does the work ingest hands out.

let (configuration, logger) = Startup.configure(
    executable: "herald-worker",
    summary: "resolves campaign targets, throttles, delivers through APNs/FCM and records results; start as many as needed.")

let workerID = "\(ProcessInfo.processInfo.hostName)-\(getpid())"

let database: SQLiteDatabase
do {
    database = try SQLiteDatabase(path: configuration.database.path,
                                  busyTimeoutMilliseconds: configuration.database.busyTimeoutMilliseconds,
                                  apps: configuration.apps)
} catch {
    logger.error("cannot open the database", ["database.path": configuration.database.path, "error": "\(error)"])
    exit(1)
}

let clock = SystemClock()
let stats = DeliveryStats()
var providers: [String: any PushProvider] = [:]
var clients: [HTTP2Client] = []
for app in configuration.apps {
    do {
        providers[app.code] = try Providers.make(for: app, clock: clock, logger: logger, stats: stats) { clients.append($0) }
    } catch {
        logger.error("cannot set up delivery", ["app": app.code, "error": "\(error)"])
        exit(1)
    }
}

let runner = ShardRunner(
    store: SQLiteCampaignStore(database: database), providers: providers, throttle: configuration.throttle,
    clock: clock, logger: logger, workerID: workerID, batchSize: 500, leaseSeconds: 30, stats: stats)
let context = QueueContext()
let worker = WorkerLoop(configuration: configuration, logger: logger, id: workerID, runner: runner,
                        analytics: SQLiteAnalyticsStore(database: database), clock: clock, stats: stats)
do {
    try worker.start(context: context)
} catch {
    logger.error("cannot connect to the queue", ["error": "\(error)"])
    exit(1)
}

let signal = Signals.waitForTermination()
logger.info("draining and stopping", ["signal": String(signal)])
worker.stop()
for client in clients { client.close() }
context.terminate()
logger.info("stopped")
exit(0)
