import Core
import Foundation
import HTTPServer

/// `GET /dashboard`: the sign-in form (application code and API token), or the application's page
/// when the browser holds a live session. `POST /dashboard` with the form signs in: the token is
/// checked once and a server-side session is opened (cookie `herald_session`: HttpOnly,
/// SameSite=Strict, Secure when `http.public_url` is https; 30 minutes idle), and the page is served.
/// `POST /dashboard/logout` ends the session. The page — campaign totals over a chosen period
/// (`?days=7|30|90`), every campaign newest first, 20 per page (`?page=N`), with their funnels and
/// rates, events per day, top screens, opt-ins and opt-outs per day, in-apps and rich media pages
/// with their statistics, worker health — is server-rendered with inline SVG
/// charts, no script and no external resources, and never contains the token. Every answer forbids
/// framing, caching and script (CSP); a sign-in or sign-out is accepted only with this server's own
/// origin in `Origin`, which browsers send with every form they post (so a page elsewhere can sign
/// a browser neither in nor out); failed sign-ins are logged and, after 5 within a minute from one
/// address, refused for the rest of it.
struct Dashboard: Sendable {
    let configuration: Configuration
    let campaigns: any MessageStore & CampaignStatisticsStore
    let analytics: any AnalyticsStore
    let richMedia: any RichMediaStore
    let workers: Dispatcher
    let clock: any Clock
    let logger: Logger
    let sessions = DashboardSessions()
    let throttle = SignInThrottle()

    static let path = "/dashboard"
    static let logoutPath = "/dashboard/logout"
    static let cookie = "herald_session"

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        let now = monotonicSeconds()
        if request.method == "POST", !originAllowed(request) {
            let action = request.path == Self.logoutPath ? "sign-out" : "sign-in"
            logger.warning("dashboard \(action) refused: not posted from this server's own page (Origin missing or another origin)",
                           ["client": clientKey(request), "origin": String((request.header("origin") ?? "").prefix(200))])
            return secured(page(login(error: "Sign in and out from this server's own page."), status: 403))
        }
        if request.path == Self.logoutPath {
            if let id = sessionID(request) { sessions.close(id) }
            return secured(page(login(error: nil, notice: "Signed out.")), cookie: "")
        }
        guard request.method == "POST" else {
            guard let id = sessionID(request), let code = sessions.app(of: id, now: now), let app = configuration.app(code: code) else {
                return secured(page(login(error: nil)))
            }
            return secured(render(app, view: View(query: request.query)))
        }
        let address = clientKey(request)
        if let wait = throttle.wait(for: address, now: now) {
            var response = secured(page(login(error: "Too many failed sign-ins; try again in \(Int(wait.rounded(.up))) s."), status: 429))
            response.headers.append(("Retry-After", String(Int(wait.rounded(.up)))))
            return response
        }
        guard let form = FormDecoding.decode(request.body), let code = form["app"], let token = form["token"],
            let app = configuration.app(code: code), TokenAuthenticator.accepts(token, for: app)
        else {
            let count = throttle.failed(address, now: now)
            let code = FormDecoding.decode(request.body)?["app"] ?? ""
            logger.warning("dashboard sign-in failed", ["client": address, "app": String(code.prefix(64)), "failures": String(count)])
            return secured(page(login(error: "Unknown application or wrong API token."), status: 403))
        }
        let id = sessions.open(app: app.code, now: now)
        logger.info("dashboard sign-in", ["client": address, "app": app.code])
        return secured(render(app, view: View()), cookie: id)
    }

    private func render(_ app: AppConfiguration, view: View) -> HTTPResponse {
        do {
            return page(try overview(app: app, view: view))
        } catch {
            logger.error("dashboard failed", ["app": app.code, "error": "\(error)"])
            return page("<main><h1>Herald</h1><p class=\"error\">The database could not be read; please retry.</p></main>", status: 500)
        }
    }

    /// The session id from the request's cookies.
    func sessionID(_ request: HTTPRequest) -> String? {
        for pair in (request.header("cookie") ?? "").split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2, parts[0] == Self.cookie, !parts[1].isEmpty { return parts[1] }
        }
        return nil
    }

    /// Who is signing in, for the throttle and the log: the last X-Forwarded-For hop when the peer is
    /// a proxy on this host, else the peer's address.
    func clientKey(_ request: HTTPRequest) -> String {
        let peer = request.clientAddress
        if peer.hasPrefix("127.") || peer == "::1", let forwarded = request.header("x-forwarded-for")?.split(separator: ",").last {
            return String(forwarded.trimmingCharacters(in: .whitespaces).prefix(64))
        }
        return peer
    }

    /// Whether a sign-in or sign-out carries this server's own origin in `Origin`: the scheme and
    /// host of `http.public_url`, or `http://` and the `Host` header. Without `Origin` (or with
    /// `null`, which a browser sends for a form it will not attribute) it does not: the header is
    /// what shows that the form was this server's page.
    func originAllowed(_ request: HTTPRequest) -> Bool {
        guard let origin = request.header("origin")?.lowercased() else { return false }
        let expected: String
        if let publicURL = configuration.http.publicURL?.lowercased(), let url = URL(string: publicURL), let scheme = url.scheme,
           let host = url.host {
            expected = "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
        } else {
            expected = "http://" + (request.header("host") ?? "").lowercased()
        }
        return origin == expected
    }

    /// Adds the headers every dashboard answer carries, and the session cookie when `cookie` is set
    /// (an empty value clears it).
    func secured(_ response: HTTPResponse, cookie: String? = nil) -> HTTPResponse {
        var response = response
        response.headers += [
            ("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"),
            ("X-Frame-Options", "DENY"), ("Cache-Control", "no-store"), ("Referrer-Policy", "same-origin"),
            ("X-Content-Type-Options", "nosniff"),
        ]
        if let cookie {
            let secure = configuration.http.publicURL?.lowercased().hasPrefix("https://") == true ? "; Secure" : ""
            let lifetime = cookie.isEmpty ? 0 : Int(DashboardSessions.idleSeconds)
            response.headers.append(("Set-Cookie", "\(Self.cookie)=\(cookie); Path=\(Self.path); Max-Age=\(lifetime); HttpOnly; SameSite=Strict\(secure)"))
        }
        return response
    }

    func page(_ body: String, status: Int = 200) -> HTTPResponse {
        let html = """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>Herald dashboard</title>
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <style>
            body { font-family: system-ui, sans-serif; margin: 0; background: #f6f7f9; color: #1d2330; }
            main { max-width: 1100px; margin: 0 auto; padding: 24px; }
            h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 28px 0 8px; }
            .muted { color: #667; } .error { color: #b00020; } .empty { color: #667; font-style: italic; }
            table { border-collapse: collapse; width: 100%; background: #fff; }
            th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e3e6ea; font-size: 14px; }
            td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
            .cards { display: flex; gap: 12px; flex-wrap: wrap; }
            .card { background: #fff; border: 1px solid #e3e6ea; border-radius: 8px; padding: 12px 16px; min-width: 150px; }
            .card b { display: block; font-size: 24px; }
            figure { background: #fff; border: 1px solid #e3e6ea; border-radius: 8px; padding: 12px; margin: 12px 0; }
            figure svg { display: block; width: 100%; height: auto; }
            nav.pager, nav.periods { margin: 10px 0; } nav a, nav b { padding: 2px 6px; }
            figcaption { font-weight: 600; margin-bottom: 6px; }
            form.login { background: #fff; padding: 24px; border-radius: 8px; max-width: 360px; border: 1px solid #e3e6ea; }
            label { display: block; margin: 10px 0 4px; } input { width: 100%; padding: 6px; box-sizing: border-box; }
            button { margin-top: 14px; padding: 8px 14px; }
            </style></head><body>\(body)</body></html>
            """
        return .text(html, status: status, contentType: "text/html; charset=utf-8")
    }

    func login(error: String?, notice: String? = nil) -> String {
        """
        <main><h1>Herald</h1><p class="muted">Sign in with an application code and its API token.</p>
        \(notice.map { "<p class=\"muted\">\(HTML.escape($0))</p>" } ?? "")
        \(error.map { "<p class=\"error\">\(HTML.escape($0))</p>" } ?? "")
        <form class="login" method="post" action="\(Self.path)">
        <label for="app">Application code</label><input id="app" name="app" autocomplete="username" required>
        <label for="token">API token</label><input id="token" name="token" type="password" autocomplete="current-password" required>
        <button type="submit">Open dashboard</button></form></main>
        """
    }

    /// What the page shows: the period of the cards and the page of campaigns, from the query.
    struct View {
        static let periods = [7, 30, 90]
        static let pageSize = 20
        var days = 30
        var page = 1

        init() {}

        /// `days` outside `periods` and pages that are not positive numbers fall back to the defaults.
        init(query: [String: String]) {
            if let days = query["days"].flatMap(Int.init), Self.periods.contains(days) { self.days = days }
            if let page = query["page"].flatMap(Int.init), page >= 1 { self.page = page }
        }

        func link(page: Int? = nil, days: Int? = nil) -> String {
            "\(Dashboard.path)?days=\(days ?? self.days)&amp;page=\(page ?? self.page)"
        }
    }

    func overview(app: AppConfiguration, view: View) throws -> String {
        let now = clock.now()
        let totals = try campaigns.campaignTotals(app: app.code, since: now - Int64(view.days) * 86_400)
        let count = try campaigns.messageCount(app: app.code)
        let pages = max(1, (count + View.pageSize - 1) / View.pageSize)
        let current = min(view.page, pages)
        let messages = try campaigns.recentMessages(app: app.code, limit: View.pageSize, offset: (current - 1) * View.pageSize)
        let today = now - now % 86_400
        let stats = try analytics.eventStatistics(app: app.code, from: today - 13 * 86_400, to: today + 86_400)
        let live = workers.liveWorkers().sorted { $0.id < $1.id }

        var html = "<main><h1>\(HTML.escape(app.name))</h1><p class=\"muted\">Application \(HTML.escape(app.code)) · "
        html += "updated \(HTML.escape(TagDate.format(now))) UTC</p>"
        html += "<nav class=\"periods\" aria-label=\"Period\">Campaigns created in the last "
        html += View.periods.map { days in
            days == view.days ? "<b>\(days) days</b>" : "<a href=\"\(view.link(page: 1, days: days))\">\(days) days</a>"
        }.joined(separator: " · ") + "</nav>"
        html += "<div class=\"cards\">"
        html += card("Campaigns (\(view.days) days)", String(totals.messages)) + card("Pushes sent", String(totals.sent))
        html += card("Delivery rate", HTML.percent(totals.delivered, of: totals.sent)) + card("Open rate", HTML.percent(totals.opened, of: totals.sent))
        html += card("Workers connected", String(live.count))
        html += card("Dispatching", workers.dispatchingIngest.map { workers.isDispatching ? "this ingest, \($0)" : $0 } ?? "no ingest")
        html += card("Reports pending", String(workers.reportProgress.pending)) + "</div>"

        html += providerTrouble(live, app: app.code)
        let counts = ["Targeted", "Sent", "Failed", "Throttled", "Retrying", "Delivered", "Opened", "Delivery", "Open"]
        let first = (current - 1) * View.pageSize
        html += HTML.section(
            count == 0 ? "Campaigns" : "Campaigns \(first + 1)–\(first + messages.count) of \(count), newest first",
            columns: ["Message", "Status", "Created (UTC)", "Content"] + counts, numeric: Set(counts),
            rows: messages.map { message in
                [message.code, message.status.rawValue, TagDate.format(message.createdAt),
                 String(localized(message.spec.content, language: nil).prefix(60))]
                    + [message.targeted, message.sent, message.failed, message.throttled, message.retrying, message.delivered,
                       message.opened].map(String.init)
                    + [HTML.percent(message.delivered, of: message.sent), HTML.percent(message.opened, of: message.sent)]
            },
            empty: "No campaigns yet.")
        html += pager(view, current: current, pages: pages)
        // Labelled by creation time (the code's first characters tell campaigns apart poorly).
        let chronological = Array(messages.reversed())
        func label(_ message: MessageStatus) -> String { String(TagDate.format(message.createdAt).dropFirst(5)) }
        html += HTML.barChart(
            title: "Delivery rate per campaign on this page (oldest to newest, by creation time UTC)",
            chronological.map { (label($0), $0.sent == 0 ? 0 : Double($0.delivered) / Double($0.sent), HTML.percent($0.delivered, of: $0.sent)) },
            color: "#2f7de1", maximum: 1)
        html += HTML.barChart(
            title: "Open rate per campaign on this page (oldest to newest, by creation time UTC)",
            chronological.map { (label($0), $0.sent == 0 ? 0 : Double($0.opened) / Double($0.sent), HTML.percent($0.opened, of: $0.sent)) },
            color: "#1f9d6b", maximum: 1)

        var perDay: [String: Int] = [:]
        for day in stats.days { perDay[day.day] = day.events }
        let days = (0..<14).map { today - Int64(13 - $0) * 86_400 }.map { String(TagDate.format($0).prefix(10)) }
        html += HTML.barChart(title: "Events per day (UTC, last 14 days)",
                              days.map { (String($0.suffix(5)), Double(perDay[$0] ?? 0), String(perDay[$0] ?? 0)) }, color: "#8a5cf6")

        html += HTML.section("Top screens (last 14 days)", columns: ["Screen", "Opens"], numeric: ["Opens"],
                             rows: stats.screens.prefix(10).map { [$0.name, String($0.count)] }, empty: "No PW_ScreenOpen events yet.")
        html += HTML.section("Top events (last 14 days)", columns: ["Event", "Count", "Devices"], numeric: ["Count", "Devices"],
                             rows: stats.events.prefix(10).map { [$0.name, String($0.count), String($0.devices)] }, empty: "No events yet.")
        html += try optInSection(app: app, today: today)
        let inApps = try richMedia.inApps(app: app.code)
        html += HTML.section("In-apps", columns: ["In-app", "Page", "Layout", "Triggered by", "Priority", "Shown", "Actions", "Action rate"],
                             numeric: ["Priority", "Shown", "Actions", "Action rate"],
                             rows: inApps.map { inApp in
                                 [inApp.spec.code, inApp.spec.richMedia, inApp.spec.layout.rawValue,
                                  Set(inApp.spec.triggers.map(\.event)).sorted().joined(separator: ", "), String(inApp.spec.priority),
                                  String(inApp.shown), String(inApp.actions), HTML.percent(inApp.actions, of: inApp.shown)]
                             }, empty: "No in-apps yet.")
        html += HTML.section("Rich media pages", columns: ["Page", "Version", "Size (bytes)", "Updated (UTC)", "Actions"],
                             numeric: ["Version", "Size (bytes)", "Actions"],
                             rows: try richMedia.pages(app: app.code).map { page in
                                 [page.code, String(page.version), String(page.size), TagDate.format(page.updatedAt), String(page.actions)]
                             }, empty: "No rich media pages yet.")
        html += HTML.section("Workers", columns: ["Worker", "Host", "Address", "PID", "Shards held", "Capacity"],
                             numeric: ["PID", "Shards held", "Capacity"],
                             rows: live.map { [$0.id, $0.host ?? "–", $0.address ?? "–", String($0.pid), String($0.jobsInFlight), String($0.capacity)] },
                             empty: "No worker is connected: campaigns wait until one starts.", emptyClass: "error")
        // Refresh is a plain GET (the session cookie says who); sign-out ends the session.
        html += "<p><a href=\"\(Self.path)\">Refresh</a></p>"
        html += "<form method=\"post\" action=\"\(Self.logoutPath)\"><button type=\"submit\">Sign out</button></form></main>"
        return html
    }

    /// Links to the newer and older pages and to every page by number (the current one in bold).
    func pager(_ view: View, current: Int, pages: Int) -> String {
        guard pages > 1 else { return "" }
        var links: [String] = []
        if current > 1 { links.append("<a href=\"\(view.link(page: current - 1))\" rel=\"prev\">Newer</a>") }
        links += (1...pages).map { $0 == current ? "<b>\($0)</b>" : "<a href=\"\(view.link(page: $0))\">\($0)</a>" }
        if current < pages { links.append("<a href=\"\(view.link(page: current + 1))\" rel=\"next\">Older</a>") }
        return "<nav class=\"pager\" aria-label=\"Campaign pages\">Page \(current) of \(pages): " + links.joined(separator: " ") + "</nav>"
    }

    /// A warning for each provider that a worker has paused because it is failing.
    func providerTrouble(_ workers: [Dispatcher.Worker], app code: String) -> String {
        var failing: [String: (reason: String, workers: Int)] = [:]
        for worker in workers {
            for circuit in worker.stats.circuits where circuit.open && circuit.app == code {
                let name = ["apns": "APNs", "fcm": "FCM", "huawei": "Huawei Push Kit", "web": "Web Push"][circuit.provider] ?? circuit.provider
                failing[name] = (circuit.reason, (failing[name]?.workers ?? 0) + 1)
            }
        }
        return failing.sorted { $0.key < $1.key }.map { name, trouble in
            "<p class=\"error\">\(name) is failing (\(HTML.escape(trouble.reason))): \(trouble.workers) worker(s) paused sending to it; "
                + "the pushes wait and are retried until they expire.</p>"
        }.joined()
    }

    func card(_ title: String, _ value: String) -> String {
        "<div class=\"card\"><span class=\"muted\">\(HTML.escape(title))</span><b>\(HTML.escape(value))</b></div>"
    }
}
