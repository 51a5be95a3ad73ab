import Foundation
import Core
import SDKClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// herald-load against targets that fail: every failure is counted by its kind, shown, and makes
/// the exit status 1; it never crashes or hangs. Bad flags exit 2 with one line.
@Suite(.fixedBackend("herald-load runs against mock targets, without Herald or a database"))
struct FleetFailureTests {
    /// A short run against `target`; returns the exit status, the output and the JSON results. Open
    /// loop at 300 req/s on one thread unless `extra` says otherwise, so that these runs leave the
    /// CPU to the other tests.
    func run(_ target: String, _ extra: [String] = ["--rate", "300"], duration: String = "1") throws
        -> (status: Int32, output: String, results: JSON)
    {
        let folder = try TemporaryDirectory()
        let json = folder.file("out.json")
        let started = Date()
        let (status, output) = try FleetTests.fleet(["--target", target, "--app", "ABCDE-12345", "--devices", "50", "--duration", duration,
                                                     "--connections", "4", "--threads", "1", "--json", json] + extra, limit: 30)
        // Never longer than the run plus the time to wait for the last replies.
        #expect(Date().timeIntervalSince(started) < 8, "\(output)")
        let results = (try? JSON.parse(Data(contentsOf: URL(fileURLWithPath: json)))) ?? .null
        return (status, output, results)
    }

    /// The run's errors by kind, all methods together.
    func errors(_ results: JSON) -> [String: Int64] {
        (results["errors"]?.objectValue ?? [:]).mapValues { $0.lenientInt ?? 0 }
    }

    func expectOnly(_ kind: String, _ run: (status: Int32, output: String, results: JSON), sourceLocation: SourceLocation = #_sourceLocation) {
        let errors = errors(run.results)
        let total = run.results["total"]?["requests"]?.lenientInt ?? 0
        #expect(run.status == 1, "\(run.output)", sourceLocation: sourceLocation)
        #expect(total > 0, "\(run.output)", sourceLocation: sourceLocation)
        #expect(errors == [kind: total], "\(run.output)", sourceLocation: sourceLocation)
        #expect(run.output.contains(kind), sourceLocation: sourceLocation)
        #expect(run.output.contains("requests failed (exit 1; --allow-errors to accept)"), sourceLocation: sourceLocation)
    }

    /// A target that goes away after the pre-flight: every request fails as refused, and no
    /// latency figure is printed or written for a run in which nothing succeeded.
    @Test func aTargetThatRefusesConnections() throws {
        // Closed loop: failed connection attempts back off instead of spinning.
        let closed = try run("http://127.0.0.1:\(try CannedHTTPServer(.refuse).port)", [])
        expectOnly("connection_refused", closed)
        #expect((closed.results["total"]?["requests"]?.lenientInt ?? 0) < 1000)
        #expect(closed.results["total"]?["p50_ms"] == .null && closed.results["total"]?["percentiles_ms"] == .null, "\(closed.results)")
        #expect(closed.output.contains("latency: none shown, since no request succeeded"), "\(closed.output)")
        #expect(!closed.output.contains("0.00"), "\(closed.output)")
        // Open loop too: every scheduled request is tried and counted.
        let open = try run("http://127.0.0.1:\(try CannedHTTPServer(.refuse).port)", ["--rate", "100"])
        expectOnly("connection_refused", open)
        let attempted = open.results["total"]?["requests"]?.lenientInt ?? 0
        #expect(attempted + (open.results["dropped"]?.lenientInt ?? 0) == 100 && attempted >= 90, "\(open.output)")
        // --allow-errors: the same counts, exit 0.
        let allowed = try run("http://127.0.0.1:\(try CannedHTTPServer(.refuse).port)", ["--allow-errors", "--rate", "50"])
        #expect(allowed.status == 0 && errors(allowed.results)["connection_refused", default: 0] > 0)
    }

    /// The pre-flight: a target where nothing listens, something that is not Herald, or an app
    /// Herald does not know ends the command at once with status 2 and one line, for fleet and
    /// campaign alike.
    @Test func preflightFailsFast() throws {
        let port = try HeraldProcesses.freePort()
        let notHerald = try CannedHTTPServer(.reply(status: 404, body: "{\"error\":\"not found\"}"))
        let unknownApp = try CannedHTTPServer(.reply(status: 200, body: "{\"status_code\":210,\"status_message\":\"application ZZZZZ-00000 not found\",\"response\":null}"))
        let cases: [(UInt16, String)] = [(port, "cannot reach --target http://127.0.0.1:\(port)"),
                                         (notHerald.port, "answered getConfig with HTTP 404"),
                                         (unknownApp.port, "--app ABCDE-12345: Herald answered status_code 210: application ZZZZZ-00000 not found")]
        for (port, message) in cases {
            // A fleet that ran its 30 s would be killed at the 20 s limit and not exit 2.
            let (status, output) = try FleetTests.fleet(["--target", "http://127.0.0.1:\(port)", "--app", "ABCDE-12345", "--devices", "10",
                                                         "--duration", "30"], limit: 20)
            #expect(status == 2 && output.split(separator: "\n").count == 1 && output.hasPrefix("herald-load fleet: ") && output.contains(message),
                    "\(output)")
            let (campaignStatus, campaignOutput) = try FleetTests.heraldLoad(
                ["campaign", "--target", "http://127.0.0.1:\(port)", "--app", "ABCDE-12345", "--token", "t"], limit: 20)
            #expect(campaignStatus == 2 && campaignOutput.split(separator: "\n").count == 1
                && campaignOutput.hasPrefix("herald-load campaign: ") && campaignOutput.contains(message), "\(campaignOutput)")
        }
    }

    @Test func serverErrors() throws {
        let server = try CannedHTTPServer(.reply(status: 503, body: "{\"status_code\":500,\"status_message\":\"busy\"}"), preflight: true)
        expectOnly("http_503", try run("http://127.0.0.1:\(server.port)"))
    }

    @Test func repliesThatAreNotJSON() throws {
        let server = try CannedHTTPServer(.reply(status: 200, body: "ok"), preflight: true)
        expectOnly("non_json", try run("http://127.0.0.1:\(server.port)"))
    }

    @Test func argumentErrorsInTheEnvelope() throws {
        let server = try CannedHTTPServer(.reply(status: 200, body: "{\"status_code\":210,\"status_message\":\"hwid is required\",\"response\":null}"), preflight: true)
        let result = try run("http://127.0.0.1:\(server.port)")
        expectOnly("status_code_210", result)
        // The first refusal of each kind is shown with Herald's own message.
        #expect(result.output.contains("argument error") && result.output.contains("(first: Herald: hwid is required)"), "\(result.output)")
        #expect(result.results["error_details"]?["status_code_210"]?.stringValue == "Herald: hwid is required", "\(result.results)")
    }

    @Test func aServerThatNeverAnswers() throws {
        let server = try CannedHTTPServer(.silent, preflight: true)
        let result = try run("http://127.0.0.1:\(server.port)", ["--timeout", "0.5", "--rate", "20"])
        expectOnly("timeout", result)
        #expect(server.requests >= 4)
    }

    @Test func connectionsClosedWithoutAReply() throws {
        let server = try CannedHTTPServer(.close, preflight: true)
        expectOnly("connection_closed", try run("http://127.0.0.1:\(server.port)"))
    }

    @Test func repliesThatAreNotHTTP() throws {
        let server = try CannedHTTPServer(.garbage, preflight: true)
        expectOnly("bad_http", try run("http://127.0.0.1:\(server.port)"))
    }

    @Test func badFlagsExit2WithOneLine() throws {
        let cases: [([String], String)] = [
            (["--app", "A", "--devices", "1", "--duration", "1"], "--target URL is required"),
            (["--target", "ftp://x", "--app", "A", "--devices", "1", "--duration", "1"], "--target must start with http:// or https://"),
            (["--target", "http://127.0.0.1:1", "--app", "A", "--devices", "0", "--duration", "1"], "--devices must be a whole number above 0"),
            (["--target", "http://127.0.0.1:1", "--app", "A", "--devices", "1", "--duration", "soon"], "--duration must be seconds"),
            (["--target", "http://127.0.0.1:1", "--app", "A", "--devices", "1", "--duration", "1", "--rate", "-3"], "--rate must be"),
            (["--target", "http://127.0.0.1:1", "--app", "A", "--devices", "1", "--duration", "1", "--turbo"], "unknown option --turbo"),
            (["--target", "https://127.0.0.1:1", "--app", "A", "--devices", "1", "--duration", "1", "--ca", "/nonexistent.pem"], "--ca cannot load"),
            (["--target", "http://127.0.0.1:1", "--app", "A", "--devices", "1", "--duration", "1", "--json", "/nonexistent/x.json"], "no folder"),
        ]
        for (arguments, message) in cases {
            let (status, output) = try FleetTests.fleet(arguments, limit: 10)
            #expect(status == 2, "\(arguments): \(output)")
            let lines = output.split(separator: "\n")
            #expect(lines.count == 1 && lines[0].hasPrefix("herald-load fleet: ") && output.contains(message), "\(arguments): \(output)")
        }
        let (status, output) = try FleetTests.fleet(["--help"], limit: 10)
        #expect(status == 0 && output.contains("--rate R") && output.contains("--onesignal F"))
    }
}
