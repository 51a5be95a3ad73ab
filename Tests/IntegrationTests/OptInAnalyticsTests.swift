import Foundation
import Core
import SDKClient
import TestSupport
import Testing

/// The push primer's analytics with the real processes: registrations whose `notificationTypes`
/// change, read back from `GET /api/v1/apps/<code>/opt-ins` and the dashboard, and campaigns that
/// skip devices not opted in unless the message is silent.
@Suite(.serialized) struct OptInAnalyticsTests {
    static let app = HeraldProcesses.appCode

    /// registerDevice with the permission mask and app version the SDK reports.
    static func register(_ herald: HeraldProcesses, _ hwid: String, platform: Int = 1, types: Int64, version: String) throws {
        var fields = SDKRequests.registerDevice(app: app, SDKDevice(hwid, platform: platform)).objectValue ?? [:]
        fields["notificationTypes"] = .int(types)
        fields["app_version"] = .string(version)
        try herald.ok("registerDevice", .object(fields))
    }

    /// Five devices: a1 opted in and a2 denied on 1.0; a3 opted in on 1.0 (registering twice), then
    /// denied and granted again on 1.1; a4 opted in on 1.1, then unregistered; a5 (Android) denied on 1.1.
    static func registerFleet(_ herald: HeraldProcesses) throws {
        try register(herald, "a1", types: 7, version: "1.0")
        try register(herald, "a2", types: 0, version: "1.0")
        try register(herald, "a3", types: 7, version: "1.0")
        try register(herald, "a3", types: 7, version: "1.0")
        try register(herald, "a3", types: 0, version: "1.1")
        try register(herald, "a3", types: 6, version: "1.1")
        try register(herald, "a4", types: 7, version: "1.1")
        try herald.unregister("a4")
        try register(herald, "a5", platform: 3, types: 0, version: "1.1")
    }

    /// The opt-in rows of the last two days (so that a run across midnight reads the same), summed per app version.
    static func optIns(_ herald: HeraldProcesses, token: String = HeraldProcesses.apiToken) throws -> (status: Int, perVersion: [String: [Int64]]) {
        let now = Int64(Date().timeIntervalSince1970)
        let response = try herald.client.request("GET", "/api/v1/apps/\(app)/opt-ins?from=\(now - 86_400)&to=\(now + 60)",
                                                 headers: [("Authorization", "Token \(token)")])
        let body = try JSON.parse(response.body)
        var perVersion: [String: [Int64]] = [:]
        for row in body["days"]?.arrayValue ?? [] {
            let counts = ["registered", "opted_in", "opted_out"].map { row[$0]?.lenientInt ?? -1 }
            let version = row["app_version"]?.stringValue ?? "none"
            perVersion[version] = zip(perVersion[version] ?? [0, 0, 0], counts).map { $0 + $1 }
        }
        return (response.status, perVersion)
    }

    @Test(arguments: TestDatabase.tested) func optInsAreCountedPerChangeAndCampaignsReachOnlyOptedInDevicesUnlessSilent(
        _ database: TestDatabase
    ) throws {
        let herald = try HeraldProcesses(database: database)
        try herald.startIngest()
        try Self.registerFleet(herald)
        let (status, perVersion) = try Self.optIns(herald)
        #expect(status == 200)
        #expect(perVersion == ["1.0": [3, 2, 1], "1.1": [2, 2, 3]])
        #expect(try Self.optIns(herald, token: "wrong").status == 403)

        try herald.startWorker()
        try herald.waitForWorkers(1)
        let shown = try herald.send(["content": "Sale"])
        try herald.waitForMessage(shown)
        #expect(try herald.sinkHWIDs(shown).sorted() == ["a1", "a3"])
        let silent = try herald.send(["ios_silent": 1, "android_silent": 1])
        try herald.waitForMessage(silent)
        #expect(try herald.sinkHWIDs(silent).sorted() == ["a1", "a2", "a3", "a5"])
        // Silent on iOS only: the denied Android device still gets nothing.
        let iosSilent = try herald.send(["ios_silent": 1, "android_content": "Sale"])
        try herald.waitForMessage(iosSilent)
        #expect(try herald.sinkHWIDs(iosSilent).sorted() == ["a1", "a2", "a3"])
    }

    @Test func theDashboardChartsOptInsAndOptOutsInARealBrowser() throws {
        #expect(FileManager.default.isExecutableFile(atPath: "/usr/bin/chromium"), "ops/install-deps --test installs chromium")
        let herald = try HeraldProcesses()
        try herald.startIngest()
        try Self.registerFleet(herald)
        let shot = ProcessInfo.processInfo.environment["HERALD_DASHBOARD_SCREENSHOT"]
        let report = try DashboardTests.signIn(port: herald.httpPort, app: Self.app, token: HeraldProcesses.apiToken, folder: herald.folder,
                                               screenshot: shot)
        #expect(report["signed_in"]?["status"] == 200)
        let dom = report["signed_in"]?["dom"]?.stringValue ?? ""
        #expect(dom.contains("Opt-ins per day (UTC, last 14 days)") && dom.contains("Opt-outs per day (UTC, last 14 days)"))
        #expect(dom.contains("Opt-in history (last 14 days)"))
        // Today's bars: 4 opt-ins and 4 opt-outs (a bar's title is "MM-dd: count").
        let today = String(TagDate.format(Int64(Date().timeIntervalSince1970)).prefix(10).suffix(5))
        #expect(dom.components(separatedBy: "<title>\(today): 4</title>").count - 1 == 2, "\(dom)")
        // The table: 1.1's row and 1.0's row for today.
        #expect(dom.contains("<td>1.1</td><td class=\"n\">2</td><td class=\"n\">2</td><td class=\"n\">3</td>"), "\(dom)")
        #expect(dom.contains("<td>1.0</td><td class=\"n\">3</td><td class=\"n\">2</td><td class=\"n\">1</td>"), "\(dom)")
    }
}
