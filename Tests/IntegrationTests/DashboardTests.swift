import Foundation
import Core
import SDKClient
import Synchronization
import TestSupport
import Testing

/// The dashboard as a person sees it: a real headless Chromium (driven by `ops/browser/sign-in`)
/// types the application code and token into Herald's sign-in form, and the test reads the pages,
/// headers and cookies the browser got.
@Suite(.serialized) struct DashboardTests {
    /// One Chromium at a time: several suites drive one, and on two cores parallel browsers starve
    /// each other past the script's deadlines.
    static let browser = Mutex(())

    /// Signs in with `ops/browser/sign-in`; returns its report (`signed_in`, `reloaded`, `cookies`).
    static func signIn(port: UInt16, app: String, token: String, folder: String, screenshot: String? = nil, follow: String? = nil,
                       visit: [String] = []) throws -> JSON {
        var arguments = [Repository.root + "/ops/browser/sign-in", "http://127.0.0.1:\(port)", app, token, "--folder", folder + "/browser"]
        if let screenshot { arguments += ["--screenshot", screenshot] }
        if let follow { arguments += ["--follow", follow] }
        for path in visit { arguments += ["--visit", path] }
        let report = folder + "/browser-report.json"
        _ = try browser.withLock { _ in
            try runTool("/bin/sh", ["-c", arguments.map { "'\($0)'" }.joined(separator: " ") + " > '\(report)'"], timeout: 180)
        }
        return try JSON.parse(Data(contentsOf: URL(fileURLWithPath: report)))
    }

    @Test func showsCampaignsRatesScreensAndWorkersInARealBrowser() throws {
        #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "ops/install-deps --test installs chromium")
        let herald = try HeraldProcesses()
        try herald.startIngest()
        let app = HeraldProcesses.appCode
        for index in 0..<4 { try herald.register(SDKDevice("d-\(index)", platform: index % 2 == 0 ? 1 : 3)) }
        try herald.startWorker()
        try herald.waitForWorkers(1)
        let code = try herald.send(["content": "Summer <sale>", "title": "Shop"])
        _ = try herald.waitForMessage(code)
        let hash = try #require(try herald.sink(code).first?["payload"]?["p"]?.stringValue
            ?? herald.sink(code).first?["payload"]?["message"]?["data"]?["p"]?.stringValue)
        for index in 0..<4 { try herald.ok("messageDeliveryEvent", ["application": .string(app), "hwid": .string("d-\(index)"), "hash": .string(hash)]) }
        try herald.ok("pushStat", ["application": .string(app), "hwid": "d-0", "hash": .string(hash)])
        try herald.ok("pushStat", ["application": .string(app), "hwid": "d-0", "hash": .string(hash)])  // an SDK retry
        // A device the message was never sent to cannot raise the rates.
        try herald.register(SDKDevice("late", platform: 1))
        try herald.ok("messageDeliveryEvent", ["application": .string(app), "hwid": "late", "hash": .string(hash)])
        let funnel = try herald.funnel(code).body
        #expect(funnel["delivered"] == 4 && funnel["opened"] == 1)
        let now = unixNow()
        for (hwid, screen) in [("d-0", "Home"), ("d-1", "Home"), ("d-2", "<script>alert(1)</script>")] {
            try herald.ok("postEvent", ["application": .string(app), "hwid": .string(hwid), "event": "PW_ScreenOpen",
                                        "attributes": ["screen_name": .string(screen)], "timestampUTC": .int(now), "timestampCurrent": .int(now)])
        }

        let workerPID = try #require(herald.workers.first?.processIdentifier)
        let workerID = try #require(HeraldProcesses.workerInfo(try herald.client.request("GET", "/metrics").text).first?.id)

        let shot = ProcessInfo.processInfo.environment["HERALD_DASHBOARD_SCREENSHOT"]
        let report = try Self.signIn(port: herald.httpPort, app: app, token: "shop-secret", folder: herald.folder, screenshot: shot)
        let dom = report["signed_in"]?["dom"]?.stringValue ?? ""
        #expect(report["signed_in"]?["status"] == 200)
        #expect(dom.contains("<h1>Shop</h1>"))
        #expect(dom.contains(code))
        #expect(dom.contains("Summer &lt;sale&gt;"))
        #expect(dom.contains("100.0%"))  // delivery rate: 4 of 4
        #expect(dom.contains("25.0%"))   // open rate: 1 of 4
        #expect(dom.contains("<svg"))
        #expect(dom.contains("Events per day"))
        #expect(dom.contains("Home"))
        #expect(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && !dom.contains("<script>alert(1)"))
        #expect(dom.contains("Workers connected"))
        // The worker's row names its host (this machine) and where its heartbeats come from (over the
        // tests' IPC endpoints, the worker process's credentials).
        #expect(dom.contains("<th>Worker</th><th>Host</th><th>Address</th>"))
        let row = "<tr><td>\(workerID)</td><td>\(try HeraldProcesses.machineHostName())</td>"
            + "<td>localhost:\(getuid()):\(getgid()):\(workerPID)</td><td class=\"n\">\(workerPID)</td>"
        #expect(dom.contains(row), "\(row)")
        #expect(dom.contains("Reports pending"))
        #expect(!dom.contains("http://") && !dom.contains("https://"), "no external resources")
        #expect(!dom.contains("shop-secret"), "the token never appears in a page")
        #expect(!dom.contains("<script"))

        // What the browser was told: a session cookie it keeps to itself, and a page it must not frame,
        // cache or script.
        let cookies = report["cookies"]?.arrayValue ?? []
        #expect(cookies.count == 1)
        let cookie = try #require(cookies.first)
        #expect(cookie["name"] == "herald_session" && cookie["httpOnly"] == true && cookie["sameSite"] == "Strict", "\(cookie.text)")
        #expect(cookie["path"] == "/dashboard" && (cookie["value"]?.stringValue?.count ?? 0) == 64)
        let headers = report["signed_in"]?["headers"] ?? .null
        #expect(headers["content-security-policy"]?.stringValue?.contains("default-src 'none'") == true, "\(headers.text)")
        #expect(headers["content-security-policy"]?.stringValue?.contains("script-src") == false)
        #expect(headers["x-frame-options"] == "DENY" && headers["cache-control"] == "no-store", "\(headers.text)")
        #expect(headers["referrer-policy"] == "same-origin")
        // Coming back is a plain GET: the cookie says who.
        #expect(report["reloaded"]?["dom"]?.stringValue?.contains("<h1>Shop</h1>") == true)

        let refused = try Self.signIn(port: herald.httpPort, app: app, token: "wrong", folder: herald.folder)
        #expect(refused["signed_in"]?["status"] == 403)
        let refusedDOM = refused["signed_in"]?["dom"]?.stringValue ?? ""
        #expect(refusedDOM.contains("wrong API token") && !refusedDOM.contains(code))
        #expect(refused["cookies"]?.arrayValue?.isEmpty == true)
        #expect(herald.log().contains("dashboard sign-in failed"))
    }

    @Test func signInAndSignOutAreGuardedAgainstOtherOriginsAndGuessing() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        let own = "http://127.0.0.1:\(herald.httpPort)"
        func post(_ form: String, origin: String? = nil, cookie: String? = nil, referer: String? = nil,
                  path: String = "/dashboard") throws -> HTTPClient.Response {
            var headers = [("Content-Type", "application/x-www-form-urlencoded")]
            if let origin { headers.append(("Origin", origin)) }
            if let cookie { headers.append(("Cookie", cookie)) }
            if let referer { headers.append(("Referer", referer)) }
            return try herald.client.request("POST", path, body: Array(form.utf8), headers: headers)
        }
        let good = "app=\(HeraldProcesses.appCode)&token=\(HeraldProcesses.apiToken)"
        // A form posted from another site is refused, even with the right token; so is one without
        // Origin (browsers send it with every form they post), whatever its Referer says.
        for (origin, referer) in [("http://evil.example", nil), (nil, nil), (nil, own + "/dashboard"), (nil, "http://evil.example/"),
                                  ("null", nil)] as [(String?, String?)] {
            let refused = try post(good, origin: origin, referer: referer)
            #expect(refused.status == 403 && !refused.text.contains("<h1>Shop</h1>") && refused.headers["set-cookie"] == nil,
                    "Origin \(origin ?? "none"), Referer \(referer ?? "none"): \(refused.status)")
        }
        #expect(herald.log().contains("dashboard sign-in refused: not posted from this server's own page"))
        // This server's own origin works; the session then opens the page.
        let signedIn = try post(good, origin: own)
        #expect(signedIn.status == 200 && signedIn.text.contains("<h1>Shop</h1>"))
        let setCookie = try #require(signedIn.headers["set-cookie"])
        let session = String(setCookie.split(separator: ";")[0])
        func isSignedIn() throws -> Bool { try herald.client.request("GET", "/dashboard", headers: [("Cookie", session)]).text.contains("<h1>Shop</h1>") }
        #expect(try isSignedIn())
        // Signing out takes the same origin: without it, or from elsewhere, the session stays.
        #expect(try post("", cookie: session, path: "/dashboard/logout").status == 403)
        #expect(try post("", origin: "http://evil.example", cookie: session, referer: own, path: "/dashboard/logout").status == 403)
        #expect(try isSignedIn())
        #expect(herald.log().contains("dashboard sign-out refused"))
        #expect(try post("", origin: own, cookie: session, path: "/dashboard/logout").status == 200)
        #expect(try !isSignedIn())
        // Guessing is slowed: after 5 failures from one address within a minute, sign-ins wait.
        for attempt in 1...5 {
            #expect(try post("app=\(HeraldProcesses.appCode)&token=guess-\(attempt)", origin: own).status == 403)
        }
        let blocked = try post(good, origin: own)
        #expect(blocked.status == 429, "even the right token waits")
        #expect((Int(blocked.headers["retry-after"] ?? "") ?? 0) > 0)
        #expect(herald.log().contains("dashboard sign-in failed") && herald.log().contains("failures=5"))
    }

    /// The message codes in a page's campaign table, top to bottom.
    static func codes(_ dom: String) -> [String] {
        let pattern = #/<td>([0-9A-F]{4}-[0-9A-F]{8}-[0-9A-F]{8})</td>/#
        return dom.matches(of: pattern).map { String($0.output.1) }
    }

    @Test func fiftyCampaignsArePagedNewestFirstAndTheCardsCoverTheChosenPeriod() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        let created = try herald.send((1...50).map { ["send_date": "2099-01-01 10:00", "content": .string("Campaign \($0)")] })
        #expect(created.count == 50)
        let report = try Self.signIn(port: herald.httpPort, app: HeraldProcesses.appCode, token: "shop-secret", folder: herald.folder,
                                     follow: "Older", visit: ["/dashboard?days=7&page=2", "/dashboard?days=365&page=99"])
        let first = report["signed_in"] ?? .null
        let followed = report["followed"]?.arrayValue ?? []
        #expect(followed.count == 2, "\(followed.map { $0["url"]?.text ?? "" })")
        let pages = [first] + followed
        let doms = pages.map { $0["dom"]?.stringValue ?? "" }
        // Every campaign once, newest first, 20 a page.
        #expect(doms.map { Self.codes($0).count } == [20, 20, 10])
        #expect(doms.flatMap(Self.codes) == created.reversed())
        #expect(doms[0].contains("Campaigns 1–20 of 50, newest first") && doms[2].contains("Campaigns 41–50 of 50, newest first"))
        #expect(doms[0].contains("Page 1 of 3") && doms[2].contains("Page 3 of 3") && !doms[2].contains(">Older<"))
        #expect(doms[1].contains(">Newer<") && doms[1].contains(">Older<"))
        // The cards add up every campaign of the period, not only those of the page.
        #expect(doms.allSatisfy { $0.contains("Campaigns (30 days)</span><b>50</b>") }, "\(doms[2])")
        let chosen = report["visited"]?.arrayValue ?? []
        let week = chosen.first?["dom"]?.stringValue ?? ""
        #expect(week.contains("Campaigns (7 days)</span><b>50</b>") && week.contains("<b>7 days</b>"))
        #expect(Self.codes(week) == Array(created.reversed()[20..<40]))
        // An unknown period and a page past the end fall back to 30 days and the last page.
        let fallback = chosen.last?["dom"]?.stringValue ?? ""
        #expect(fallback.contains("Campaigns (30 days)") && Self.codes(fallback) == Array(created.reversed()[40...]))
        // The charts fill their figures, and label bars by creation time.
        for page in pages {
            let charts = page["charts"]?.arrayValue ?? []
            #expect(charts.count == 5)  // delivery and open rates, events, opt-ins, opt-outs
            for chart in charts {
                let width = chart["width"]?.lenientDouble ?? 0, container = chart["container"]?.lenientDouble ?? 1
                #expect(width >= container * 0.98 && width > 600, "\(chart.text)")
            }
        }
        #expect(doms[0].contains("Delivery rate per campaign on this page"))
        #expect(!doms.contains { $0.contains("<script") })
    }
}
