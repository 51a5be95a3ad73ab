import Core
import Foundation
import SDKClient

/// Sends the campaign and follows it: the funnel every 200 ms, the edge's counts every 50 ms, until
/// Herald says the message is finished and the edge has seen every push Herald made (or the
/// timeout). Request failures are counted by kind; none ends the run early except createMessage's.
struct CampaignFollower {
    let options: CampaignOptions
    let herald: HTTPClient
    let edge: EdgeAdmin?

    /// What happened, for the summary, the JSON and the exit status.
    struct Result {
        var message: String?
        var funnel: JSON = .null
        var edgeReceived: Int?
        var edgeAccepted: Int?
        var edgeRejected: [String: Int] = [:]
        var reported: (delivered: Int, opened: Int)?
        var timeline = CampaignTimeline()
        /// Seconds from createMessage to Herald's "done" (or the last push at the edge).
        var doneSeconds: Double?
        var errors: [String: Int] = [:]
        var problems: [String] = []
        /// The report wait's bound, and how long the reports were followed after the last push.
        var reportWaitSeconds: Double?
        var reportsFollowedSeconds: Double?
        /// Funnel figures (`delivered`, `opened`) that were still growing when the run ended.
        var stillArriving: [String] = []
        /// Reports the edge still owed Herald at the end.
        var pendingReports: Int?

        var failed: Bool { !problems.isEmpty }

        func count(_ key: String) -> Int? { funnel[key]?.lenientInt.map(Int.init) }
    }

    mutating func run(progress: ((String) -> Void)?) -> Result {
        var result = Result()
        var baseline = EdgeAdmin.Counts()
        if let edge {
            do { baseline = try edge.counts() } catch {
                result.errors["edge_unreachable", default: 0] += 1
                result.problems.append("the edge's /stats cannot be read: \(error)")
                return result
            }
        }
        let start = MonotonicClock.now()
        func elapsed() -> Double { Double(MonotonicClock.now() - start) / 1e9 }
        do {
            result.message = try create()
        } catch {
            result.errors["create_failed", default: 0] += 1
            result.problems.append("createMessage failed: \(error)")
            return result
        }
        var lastFunnel = -1.0
        var lastProgress = 0.0
        var finishedAt: Double?
        var edgeNow = baseline
        /// Reads the edge (every call) and the funnel (every 200 ms), and draws the live line.
        func sample(_ result: inout Result, now: Double) {
            if let edge {
                do {
                    let counts = try edge.counts()
                    edgeNow = counts
                    result.timeline.record(seconds: now, pushes: counts.received - baseline.received)
                    result.edgeReceived = counts.received - baseline.received
                    result.edgeAccepted = counts.accepted - baseline.accepted
                    result.edgeRejected = counts.rejected.merging(baseline.rejected) { $0 - $1 }.filter { $0.value > 0 }
                    result.reported = (counts.delivered - baseline.delivered, counts.opened - baseline.opened)
                } catch {
                    result.errors["edge_stats", default: 0] += 1
                }
            }
            if now - lastFunnel >= 0.2 {
                lastFunnel = now
                do {
                    result.funnel = try funnel(result.message!)
                } catch {
                    result.errors[(error as? Kind)?.kind ?? "funnel_connection", default: 0] += 1
                }
            }
            if let progress, now - lastProgress >= 1 {
                lastProgress = now
                progress(line(result, seconds: now))
            }
        }
        while elapsed() < options.timeoutSeconds {
            let now = elapsed()
            sample(&result, now: now)
            let status = result.funnel["status"]?.stringValue ?? ""
            if ["done", "failed", "deleted"].contains(status), finishedAt == nil { finishedAt = now }
            if let finished = finishedAt {
                let made = (result.count("sent") ?? 0) + (result.count("failed") ?? 0)
                // The edge may still be answering the last pushes Herald counted; give it 5 s.
                if edge == nil || (result.edgeReceived ?? 0) >= made || now - finished > 5 {
                    result.doneSeconds = edge == nil ? finished : result.timeline.time(reaching: 1) ?? finished
                    break
                }
            }
            usleep(edge == nil ? 200_000 : 50_000)
        }
        if result.doneSeconds != nil { followReports(&result, edgeNow: { edgeNow }, sample: { sample(&$0, now: elapsed()) }, elapsed: elapsed) }
        judge(&result)
        return result
    }

    /// How long the report wait lasts at most: `--report-wait`, else long enough for an edge that
    /// reports (its opens come up to 10 report delays after the push), else 0.
    static func reportWait(option: Double?, edgeReportDelay: Double?) -> Double {
        option ?? edgeReportDelay.map { 10 * $0 + 5 } ?? 0
    }

    /// After the last push: keeps reading the funnel until every report the edge made or still
    /// owes is counted by Herald (with an edge that reports), or the report wait ends; then notes
    /// which of `delivered` and `opened` were still arriving.
    private func followReports(_ result: inout Result, edgeNow: () -> EdgeAdmin.Counts, sample: (inout Result) -> Void,
                               elapsed: () -> Double) {
        let reporting = edge != nil && edgeNow().reportDelaySeconds != nil
        let wait = Self.reportWait(option: options.reportWaitSeconds, edgeReportDelay: edge == nil ? nil : edgeNow().reportDelaySeconds)
        result.reportWaitSeconds = wait
        let begin = elapsed()
        var seen = (delivered: result.count("delivered") ?? 0, opened: result.count("opened") ?? 0)
        var changed = (delivered: begin, opened: begin)
        func settled(_ result: Result) -> Bool {
            guard reporting, let reported = result.reported else { return false }
            return edgeNow().pendingReports == 0 && (result.count("delivered") ?? 0) >= reported.delivered
                && (result.count("opened") ?? 0) >= reported.opened
        }
        while elapsed() - begin < wait && !settled(result) {
            usleep(edge == nil ? 200_000 : 50_000)
            sample(&result)
            let now = elapsed()
            let figures = (delivered: result.count("delivered") ?? 0, opened: result.count("opened") ?? 0)
            if figures.delivered != seen.delivered { changed.delivered = now }
            if figures.opened != seen.opened { changed.opened = now }
            seen = figures
        }
        let end = elapsed()
        result.reportsFollowedSeconds = end - begin
        var arriving: [String] = []
        if reporting, let reported = result.reported {
            let pending = edgeNow().pendingReports
            if seen.delivered < reported.delivered || pending > 0 { arriving.append("delivered") }
            if seen.opened < reported.opened || pending > 0 { arriving.append("opened") }
            if pending > 0 { result.pendingReports = pending }
        } else if edge == nil {
            // Without an edge nothing says how many reports are due: a figure that moved in the
            // last second (or was never waited for) may still grow.
            if wait == 0 || end - changed.delivered < 1 { arriving.append("delivered") }
            if wait == 0 || end - changed.opened < 1 { arriving.append("opened") }
        }
        result.stillArriving = arriving
    }

    private struct Kind: Error, CustomStringConvertible {
        let kind: String
        let description: String
    }

    private func create() throws -> String {
        var notification: [String: JSON] = ["send_date": "now", "content": .string(options.content)]
        if let conditions = options.conditions { notification["conditions"] = conditions }
        let request: JSON = ["request": ["application": .string(options.app), "auth": .string(options.token),
                                         "notifications": [.object(notification)]]]
        let response = try herald.request("POST", options.target.pathPrefix + "/json/1.3/createMessage", body: request.encoded(),
                                          headers: [("Content-Type", "application/json")])
        guard response.status == 200, let body = try? JSON.parse(response.body) else {
            throw Kind(kind: "create_failed", description: "HTTP \(response.status): \(response.text.prefix(200))")
        }
        guard body["status_code"] == .int(200), let code = body["response"]?["Messages"]?.arrayValue?.first?.stringValue else {
            throw Kind(kind: "create_failed", description: "status_code \(body["status_code"]?.text ?? "?"): \(body["status_message"]?.stringValue ?? "")")
        }
        return code
    }

    private func funnel(_ code: String) throws -> JSON {
        let response = try herald.request("GET", options.target.pathPrefix + "/api/v1/messages/\(code)",
                                          headers: [("Authorization", "Token \(options.token)")])
        guard response.status == 200, let body = try? JSON.parse(response.body) else {
            throw Kind(kind: "funnel_http_\(response.status)", description: "the funnel answered HTTP \(response.status)")
        }
        return body
    }

    private func line(_ result: Result, seconds: Double) -> String {
        var parts = ["\(TextFormat.fixed(seconds, 1)) s", "status \(result.funnel["status"]?.stringValue ?? "?")",
                     "targeted \(result.count("targeted").map(TextFormat.grouped) ?? "?")",
                     "sent \(TextFormat.grouped(result.count("sent") ?? 0))", "failed \(TextFormat.grouped(result.count("failed") ?? 0))"]
        if let received = result.edgeReceived {
            parts.append("edge \(TextFormat.grouped(received))")
            if let first = result.timeline.time(reaching: 0), seconds > first {
                parts.append("\(TextFormat.rate(Double(received) / (seconds - first))) pushes/s")
            }
        }
        let errors = result.errors.values.reduce(0, +)
        if errors > 0 { parts.append("errors \(errors)") }
        return parts.joined(separator: "  ")
    }

    /// What makes the run a failure: a campaign that did not finish, failed pushes, the edge
    /// disagreeing with Herald, request errors.
    private func judge(_ result: inout Result) {
        let status = result.funnel["status"]?.stringValue
        if result.doneSeconds == nil { result.problems.append("the campaign did not finish within \(TextFormat.fixed(options.timeoutSeconds, 0)) s (status \(status ?? "unknown"))") }
        if status == "failed" || status == "deleted" { result.problems.append("the campaign ended \(status!)") }
        if let failed = result.count("failed"), failed > 0 { result.problems.append("\(failed) pushes failed") }
        if let accepted = result.edgeAccepted, let sent = result.count("sent"), accepted != sent {
            result.errors["edge_mismatch", default: 0] += 1
            result.problems.append("the edge accepted \(accepted) pushes but Herald counts \(sent) sent")
        }
        let errors = result.errors.filter { $0.key != "edge_mismatch" }.values.reduce(0, +)
        if errors > 0 { result.problems.append("\(errors) requests failed") }
    }
}

extension CampaignFollower.Result {
    /// `--json`: the issue's keys first, then the rest of the funnel and the edge's view.
    var json: JSON {
        func number(_ value: Double?) -> JSON { value.map { .double(($0 * 1000).rounded() / 1000) } ?? .null }
        func int(_ value: Int?) -> JSON { value.map { .int(Int64($0)) } ?? .null }
        let pushes = timeline.pushesPerSecond ?? doneSeconds.flatMap { done in count("sent").map { Double($0) / max(done, 0.001) } }
        return [
            "message": message.map(JSON.string) ?? .null, "targeted": int(count("targeted")), "sent": int(count("sent")),
            "failed": int(count("failed")), "edge_received": int(edgeReceived), "first_push_s": number(timeline.time(reaching: 0)),
            "done_s": number(doneSeconds), "pushes_per_s": number(pushes),
            "pushes_series": .array(timeline.perSecond.map { .int(Int64($0)) }),
            "half_s": number(timeline.time(reaching: 0.5)), "p99_s": number(timeline.time(reaching: 0.99)),
            "status": funnel["status"] ?? .null, "throttled": int(count("throttled")), "delivered": int(count("delivered")),
            "opened": int(count("opened")), "funnel_errors": funnel["errors"] ?? .null, "edge_accepted": int(edgeAccepted),
            "edge_rejected": .object(edgeRejected.mapValues { .int(Int64($0)) }),
            "edge_reported": reported.map { ["delivered": .int(Int64($0.delivered)), "opened": .int(Int64($0.opened))] } ?? .null,
            "errors": .object(errors.mapValues { .int(Int64($0)) }),
            "report_wait_s": number(reportWaitSeconds), "reports_followed_s": number(reportsFollowedSeconds),
            "still_arriving": .array(stillArriving.map(JSON.string)), "pending_reports": int(pendingReports),
            "problems": .array(problems.map(JSON.string)),
        ]
    }

    /// The line that says whether the delivery and open figures are complete.
    var reportsLine: String? {
        guard let followed = reportsFollowedSeconds else { return nil }
        let after = "\(TextFormat.fixed(followed, 1)) s after the last push"
        guard !stillArriving.isEmpty else { return "  reports   complete \(after)" }
        let figures = stillArriving.map { name in
            let herald = count(name).map(TextFormat.grouped) ?? "-"
            let edge = reported.map { name == "delivered" ? $0.delivered : $0.opened }
            return "\(name) (Herald \(herald)" + (edge.map { ", the edge reported \(TextFormat.grouped($0))" } ?? "") + ")"
        }
        var text = "  reports   still arriving \(after): " + figures.joined(separator: ", ")
        if let pending = pendingReports { text += "; the edge still owes \(TextFormat.grouped(pending)) reports" }
        if reportWaitSeconds == 0 { text += " (--report-wait S to wait for them)" }
        return text
    }

    /// The table printed at the end.
    var summary: String {
        func seconds(_ value: Double?) -> String { value.map { TextFormat.fixed($0, 2) + " s" } ?? "-" }
        func grouped(_ value: Int?) -> String { value.map(TextFormat.grouped) ?? "-" }
        var lines = ["herald-load campaign: message \(message ?? "-"), status \(funnel["status"]?.stringValue ?? "-")", ""]
        lines.append("  funnel    targeted \(grouped(count("targeted")))  sent \(grouped(count("sent")))  failed \(grouped(count("failed")))  "
            + "throttled \(grouped(count("throttled")))  delivered \(grouped(count("delivered")))  opened \(grouped(count("opened")))")
        if let reportsLine { lines.append(reportsLine) }
        if let errors = funnel["errors"]?.objectValue, !errors.isEmpty {
            lines.append("  funnel errors  " + errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.text)" }.joined(separator: ", "))
        }
        if let received = edgeReceived {
            lines.append("  edge      received \(TextFormat.grouped(received))  accepted \(grouped(edgeAccepted))  refused "
                + (edgeRejected.isEmpty ? "0" : edgeRejected.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")))
            if let reported { lines.append("  reported  delivered \(TextFormat.grouped(reported.delivered))  opened \(TextFormat.grouped(reported.opened))") }
            lines.append("  timing    first push \(seconds(timeline.time(reaching: 0)))  50 % \(seconds(timeline.time(reaching: 0.5)))  "
                + "99 % \(seconds(timeline.time(reaching: 0.99)))  all \(seconds(doneSeconds))  "
                + "\(timeline.pushesPerSecond.map { TextFormat.rate($0) + " pushes/s" } ?? "")")
        } else {
            lines.append("  timing    done \(seconds(doneSeconds)) after createMessage")
        }
        if !errors.isEmpty {
            lines.append("  errors    " + errors.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        return lines.joined(separator: "\n")
    }
}
