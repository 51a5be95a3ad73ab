import Core

/// What the edge counted, as `GET /stats` shows it (and `GET /metrics`, in the Prometheus text
/// format). Thread-safe: the loop threads and the reporter count here at once.
final class EdgeStats: Sendable {
    struct Counts {
        var apnsAccepted = 0
        var apnsRejected: [String: Int] = [:]
        var fcmAccepted = 0
        var fcmRejected: [String: Int] = [:]
        var huaweiAccepted = 0
        var huaweiRejected: [String: Int] = [:]
        var webAccepted = 0
        var webRejected: [String: Int] = [:]
        var huaweiTokensIssued = 0
        var huaweiTokenRejected: [String: Int] = [:]
        var tokensIssued = 0
        var tokenRejected: [String: Int] = [:]
        var delivered = 0
        var opened = 0
        /// Reports scheduled, and those of them made or failed since: the rest are pending.
        var scheduled = 0
        var settled = 0
        var reportErrors: [String: Int] = [:]
        var unknownDevices = 0
        /// Unix milliseconds of the first and last push (accepted or not).
        var firstPush: Int64?
        var lastPush: Int64?

        /// Reports scheduled and not yet made (nor failed).
        var pending: Int { scheduled - settled }
    }

    private let counts = Lock(Counts())
    /// `--report-delay` when the edge reports to Herald, else nil.
    let reportDelaySeconds: Double?

    init(reportDelaySeconds: Double?) {
        self.reportDelaySeconds = reportDelaySeconds
    }

    func push(_ platform: EdgePlatform, accepted: Bool, reason: String?, now: Int64) {
        counts.withLock { counts in
            if counts.firstPush == nil { counts.firstPush = now }
            counts.lastPush = now
            switch (platform, accepted) {
            case (.apns, true): counts.apnsAccepted += 1
            case (.apns, false): counts.apnsRejected[reason ?? "unknown", default: 0] += 1
            case (.fcm, true): counts.fcmAccepted += 1
            case (.fcm, false): counts.fcmRejected[reason ?? "unknown", default: 0] += 1
            case (.huawei, true): counts.huaweiAccepted += 1
            case (.huawei, false): counts.huaweiRejected[reason ?? "unknown", default: 0] += 1
            case (.web, true): counts.webAccepted += 1
            case (.web, false): counts.webRejected[reason ?? "unknown", default: 0] += 1
            }
        }
    }

    /// Counts a token request at FCM's (`platform` .fcm) or Huawei's endpoint.
    func tokenRequest(_ platform: EdgePlatform = .fcm, refusal: String?) {
        counts.withLock { counts in
            switch (platform, refusal) {
            case (.huawei, let refusal?): counts.huaweiTokenRejected[refusal, default: 0] += 1
            case (.huawei, nil): counts.huaweiTokensIssued += 1
            case (_, let refusal?): counts.tokenRejected[refusal, default: 0] += 1
            case (_, nil): counts.tokensIssued += 1
            }
        }
    }

    func reported(opened: Bool) {
        counts.withLock { counts in
            if opened { counts.opened += 1 } else { counts.delivered += 1 }
            counts.settled += 1
        }
    }

    /// Counts `count` reports scheduled for one accepted push.
    func scheduled(_ count: Int) { counts.withLock { $0.scheduled += count } }

    /// Counts a report that could not be made; `scheduled` when it was one of the scheduled reports.
    func reportFailed(_ kind: String, scheduled: Bool = true) {
        counts.withLock { counts in
            counts.reportErrors[kind, default: 0] += 1
            if scheduled { counts.settled += 1 }
        }
    }
    func unknownDevice() { counts.withLock { $0.unknownDevices += 1 } }

    /// The `/metrics` body: pushes by provider and outcome (a refusal under its reason), and the
    /// devices' reports.
    func metrics() -> String {
        let counts = counts.withLock { $0 }
        var lines = ["# HELP herald_load_edge_pushes_total Pushes the edge answered, by provider and outcome (rejected ones by reason).",
                     "# TYPE herald_load_edge_pushes_total counter"]
        let providers: [(String, Int, [String: Int])] = [("apns", counts.apnsAccepted, counts.apnsRejected), ("fcm", counts.fcmAccepted, counts.fcmRejected),
                                                         ("huawei", counts.huaweiAccepted, counts.huaweiRejected), ("web", counts.webAccepted, counts.webRejected)]
        for (provider, accepted, rejected) in providers {
            lines.append("herald_load_edge_pushes_total{provider=\"\(provider)\",outcome=\"accepted\",reason=\"\"} \(accepted)")
            for (reason, count) in rejected.sorted(by: { $0.key < $1.key }) {
                lines.append("herald_load_edge_pushes_total{provider=\"\(provider)\",outcome=\"rejected\",reason=\"\(reason)\"} \(count)")
            }
        }
        lines += ["# HELP herald_load_edge_reports_total Reports the edge posted to Herald for the devices, by kind.",
                  "# TYPE herald_load_edge_reports_total counter",
                  "herald_load_edge_reports_total{kind=\"delivered\"} \(counts.delivered)",
                  "herald_load_edge_reports_total{kind=\"opened\"} \(counts.opened)",
                  "# HELP herald_load_edge_reports_pending Reports scheduled and not yet made.",
                  "# TYPE herald_load_edge_reports_pending gauge",
                  "herald_load_edge_reports_pending \(counts.pending)"]
        return lines.joined(separator: "\n") + "\n"
    }

    /// The `/stats` body.
    func json(connections: Int, connectionsAccepted: Int) -> JSON {
        let counts = counts.withLock { $0 }
        func tally(_ values: [String: Int]) -> JSON { .object(values.mapValues { .int(Int64($0)) }) }
        return [
            "apns": ["accepted": .int(Int64(counts.apnsAccepted)), "rejected": tally(counts.apnsRejected)],
            "fcm": ["accepted": .int(Int64(counts.fcmAccepted)), "rejected": tally(counts.fcmRejected),
                    "tokens_issued": .int(Int64(counts.tokensIssued)), "token_rejected": tally(counts.tokenRejected)],
            "huawei": ["accepted": .int(Int64(counts.huaweiAccepted)), "rejected": tally(counts.huaweiRejected),
                       "tokens_issued": .int(Int64(counts.huaweiTokensIssued)), "token_rejected": tally(counts.huaweiTokenRejected)],
            "web": ["accepted": .int(Int64(counts.webAccepted)), "rejected": tally(counts.webRejected)],
            "connections": .int(Int64(connections)),
            "connections_accepted": .int(Int64(connectionsAccepted)),
            "reported": ["delivered": .int(Int64(counts.delivered)), "opened": .int(Int64(counts.opened)),
                         "errors": tally(counts.reportErrors), "unknown_devices": .int(Int64(counts.unknownDevices)),
                         "pending": .int(Int64(counts.pending)), "delay_s": reportDelaySeconds.map(JSON.double) ?? .null],
            "first_push_ms": counts.firstPush.map { .int($0) } ?? .null,
            "last_push_ms": counts.lastPush.map { .int($0) } ?? .null,
        ]
    }
}

/// Which service a push went to.
enum EdgePlatform: Sendable {
    case apns, fcm, huawei, web
}
