import Foundation
import Core
import SDKClient
import TestSupport
import Testing

/// The dashboard as a person sees it: a real headless Chromium signs in through the form and the
/// test reads the rendered page.
@Suite(.serialized) struct DashboardTests {
    /// Loads `html` in headless Chromium (it submits the sign-in form itself) and returns the DOM
    /// after scripts ran; also writes a screenshot when `screenshot` is set.
    static func render(_ html: String, folder: String, screenshot: String? = nil) throws -> String {
        let page = folder + "/signin.html"
        try html.write(toFile: page, atomically: true, encoding: .utf8)
        func run(_ extra: [String]) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/chromium")
            process.arguments = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                                 "--user-data-dir=\(folder)/chromium", "--virtual-time-budget=10000"] + extra + ["file://\(page)"]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "chromium exited with \(process.terminationStatus)")
            return String(decoding: data, as: UTF8.self)
        }
        if let screenshot { _ = try run(["--screenshot=\(screenshot)", "--window-size=1200,2200", "--hide-scrollbars"]) }
        // On a loaded machine Chromium sometimes dumps before the posted page has arrived: try again
        // (at most three times) until the page is there.
        var dom = ""
        for _ in 0..<3 {
            dom = try run(["--dump-dom"])
            if dom.contains("</main>") { break }
        }
        return dom
    }

    static func signIn(port: UInt16, app: String, token: String) -> String {
        """
        <!DOCTYPE html><html><body onload="document.forms[0].submit()">
        <form method="post" action="http://127.0.0.1:\(port)/dashboard">
        <input name="app" value="\(app)"><input name="token" value="\(token)"></form></body></html>
        """
    }

    @Test func showsCampaignsRatesScreensAndWorkersInARealBrowser() throws {
        #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "ops/install-deps installs chromium")
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

        let shot = ProcessInfo.processInfo.environment["HERALD_DASHBOARD_SCREENSHOT"]
        let dom = try Self.render(Self.signIn(port: herald.httpPort, app: app, token: "shop-secret"), folder: herald.folder, screenshot: shot)
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
        #expect(dom.contains("Reports pending"))
        #expect(!dom.contains("http://") && !dom.contains("https://"), "no external resources")

        let refused = try Self.render(Self.signIn(port: herald.httpPort, app: app, token: "wrong"), folder: herald.folder)
        #expect(refused.contains("wrong API token"))
        #expect(!refused.contains(code))
    }
}
