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

    @Test func aTargetThatRefusesConnections() throws {
        let port = try HeraldProcesses.freePort()
        // Closed loop: failed connection attempts back off instead of spinning.
        let closed = try run("http://127.0.0.1:\(port)", [])
        expectOnly("connection_refused", closed)
        #expect((closed.results["total"]?["requests"]?.lenientInt ?? 0) < 1000)
        // Open loop too: every scheduled request is tried and counted.
        let open = try run("http://127.0.0.1:\(port)", ["--rate", "100"])
        expectOnly("connection_refused", open)
        let attempted = open.results["total"]?["requests"]?.lenientInt ?? 0
        #expect(attempted + (open.results["dropped"]?.lenientInt ?? 0) == 100 && attempted >= 90, "\(open.output)")
        // --allow-errors: the same counts, exit 0.
        let allowed = try run("http://127.0.0.1:\(port)", ["--allow-errors", "--rate", "50"])
        #expect(allowed.status == 0 && errors(allowed.results)["connection_refused", default: 0] > 0)
    }

    @Test func serverErrors() throws {
        let server = try CannedHTTPServer(.reply(status: 503, body: "{\"status_code\":500,\"status_message\":\"busy\"}"))
        expectOnly("http_503", try run("http://127.0.0.1:\(server.port)"))
    }

    @Test func repliesThatAreNotJSON() throws {
        let server = try CannedHTTPServer(.reply(status: 200, body: "ok"))
        expectOnly("non_json", try run("http://127.0.0.1:\(server.port)"))
    }

    @Test func argumentErrorsInTheEnvelope() throws {
        let server = try CannedHTTPServer(.reply(status: 200, body: "{\"status_code\":210,\"status_message\":\"hwid is required\",\"response\":null}"))
        let result = try run("http://127.0.0.1:\(server.port)")
        expectOnly("status_code_210", result)
        #expect(result.output.contains("argument error"))
    }

    @Test func aServerThatNeverAnswers() throws {
        let server = try CannedHTTPServer(.silent)
        let result = try run("http://127.0.0.1:\(server.port)", ["--timeout", "0.5", "--rate", "20"])
        expectOnly("timeout", result)
        #expect(server.requests >= 4)
    }

    @Test func connectionsClosedWithoutAReply() throws {
        let server = try CannedHTTPServer(.close)
        expectOnly("connection_closed", try run("http://127.0.0.1:\(server.port)"))
    }

    @Test func repliesThatAreNotHTTP() throws {
        let server = try CannedHTTPServer(.garbage)
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
