import Core
import Foundation
import SDKClient
import Synchronization

/// The devices' side of the loop: for every accepted push it posts `messageDeliveryEvent` to Herald
/// (the payload's hash `p`, the device's hwid) after a delay, as the SDK does when the push
/// arrives, and `pushStat` (opened) for a fraction of them, later. Reports run on their own threads,
/// each with one keep-alive connection, earliest due first; failures are counted by kind.
final class DeviceReporter: Sendable {
    struct Report {
        let hwid: String
        let hash: String
        let opened: Bool
    }

    private struct Queue {
        var due = DueHeap()
        var reports: [Int: Report] = [:]
        var nextID = 0
    }

    let target: TargetURL
    let app: String
    let directory: DeviceDirectory
    let openRate: Double
    let delayNanoseconds: Int64
    let stats: EdgeStats
    private let tls: TLSClientContext?
    private let queue = Lock(Queue())
    private let stopping = Atomic<Bool>(false)

    init(target: TargetURL, app: String, directory: DeviceDirectory, openRate: Double, delaySeconds: Double, tls: TLSClientContext?,
         stats: EdgeStats) {
        self.target = target
        self.app = app
        self.directory = directory
        self.openRate = openRate
        delayNanoseconds = Int64(delaySeconds * 1e9)
        self.tls = tls
        self.stats = stats
    }

    /// Schedules the reports of a push accepted for `token` carrying message hash `hash`.
    func accepted(token: String, hash: String?) {
        guard let hash, !hash.isEmpty else { return stats.reportFailed("no_hash_in_payload", scheduled: false) }
        guard let hwid = directory.hwid(token: token) else { return stats.unknownDevice() }
        schedule(hwid: hwid, hash: hash)
    }

    /// Schedules the reports of a push accepted for the device `hwid` (a browser, whose endpoint names it).
    func accepted(hwid: String, hash: String?) {
        guard let hash, !hash.isEmpty else { return stats.reportFailed("no_hash_in_payload", scheduled: false) }
        schedule(hwid: hwid, hash: hash)
    }

    private func schedule(hwid: String, hash: String) {
        var random = SystemRandomNumberGenerator()
        let now = MonotonicClock.now()
        let delivered = now + Int64(Double(delayNanoseconds) * Double.random(in: 0.5...1.5, using: &random))
        let opened = Double.random(in: 0..<1, using: &random) < openRate
        let openAt = now + Int64(Double(delayNanoseconds) * Double.random(in: 2...10, using: &random))
        queue.withLock { queue in
            queue.reports[queue.nextID] = Report(hwid: hwid, hash: hash, opened: false)
            queue.due.push(delivered, queue.nextID)
            queue.nextID += 1
            if opened {
                queue.reports[queue.nextID] = Report(hwid: hwid, hash: hash, opened: true)
                queue.due.push(openAt, queue.nextID)
                queue.nextID += 1
            }
        }
        stats.scheduled(opened ? 2 : 1)
    }

    /// Starts `threads` sending threads.
    func start(threads: Int) {
        for index in 0..<threads {
            let thread = Thread(named: "reporter-\(index)") { [self] in run() }
            thread.start()
        }
    }

    func stop() { stopping.store(true, ordering: .relaxed) }

    private func run() {
        let client = HTTPClient(host: target.host, port: target.port, tls: tls)
        while !stopping.load(ordering: .relaxed) {
            let next: Report? = queue.withLock { queue in
                guard let (_, id) = queue.due.popDue(MonotonicClock.now()) else { return nil }
                return queue.reports.removeValue(forKey: id)
            }
            guard let report = next else {
                usleep(5_000)
                continue
            }
            send(report, with: client)
        }
    }

    private func send(_ report: Report, with client: HTTPClient) {
        let method = report.opened ? "pushStat" : "messageDeliveryEvent"
        let body = JSON.object(["request": SDKRequests.pushTracking(app: app, hwid: report.hwid, hash: report.hash)]).encoded()
        do {
            let response = try client.request("POST", target.pathPrefix + "/json/1.3/" + method, body: body,
                                              headers: [("Content-Type", "application/json")])
            guard response.status == 200 else { return stats.reportFailed("http_\(response.status)") }
            guard (try? JSON.parse(response.body))?["status_code"] == .int(200) else { return stats.reportFailed("status_code") }
            stats.reported(opened: report.opened)
        } catch {
            client.disconnect()
            stats.reportFailed("connection")
        }
    }
}
