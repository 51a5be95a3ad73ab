@testable import Loadgen
import SDKClient
import Testing

/// The fleet's command line: what each flag sets, the defaults, and one-line refusals.
struct FleetOptionsTests {
    let required = ["--target", "http://127.0.0.1:8080", "--app", "ABCDE-12345", "--devices", "1000", "--duration", "30"]

    func parse(_ extra: [String], cores: Int = 2) throws -> FleetOptions {
        try #require(try FleetOptions.parse(required + extra, cores: cores))
    }

    @Test func defaultsAreAClosedLoopOn64ConnectionsAndEveryCore() throws {
        let options = try parse([], cores: 8)
        #expect(options.target == TargetURL(isTLS: false, host: "127.0.0.1", port: 8080))
        #expect(options.app == "ABCDE-12345" && options.devices == 1000 && options.durationSeconds == 30)
        #expect(options.rate == nil && options.connections == 64 && options.threads == 8 && options.seed == 1)
        #expect(options.timeoutSeconds == 10 && !options.allowErrors && options.oneSignalFraction == 0 && options.jsonPath == nil)
    }

    @Test func everyFlagIsRead() throws {
        let options = try parse(["--rate", "2500.5", "-c", "128", "--threads=3", "--seed", "42", "--json", "out.json",
                                 "--report", "r.html", "--onesignal", "0.25", "--timeout", "2s", "--allow-errors", "-q"])
        #expect(options.rate == 2500.5 && options.connections == 128 && options.threads == 3 && options.seed == 42)
        #expect(options.jsonPath == "out.json" && options.reportPath == "r.html" && options.oneSignalFraction == 0.25)
        #expect(options.timeoutSeconds == 2 && options.allowErrors && !options.progress)
        let tls = try #require(try FleetOptions.parse(["--target", "https://h/", "--app", "A", "--devices", "5", "--duration", "1m",
                                                       "--ca", "ca.pem"], cores: 2))
        #expect(tls.caFile == "ca.pem" && tls.durationSeconds == 60 && tls.target.isTLS)
        #expect(try FleetOptions.parse(["--help"], cores: 2) == nil)
    }

    @Test func connectionsNeverOutnumberDevicesOrScheduledRequests() throws {
        let few = try #require(try FleetOptions.parse(["--target", "http://h:1", "--app", "A", "--devices", "10", "--duration", "5"], cores: 4))
        #expect(few.connections == 10 && few.threads == 4)
        let slow = try parse(["--rate", "2", "--connections", "64"])  // 60 requests in 30 s
        #expect(slow.connections == 60)
        let one = try #require(try FleetOptions.parse(["--target", "http://h:1", "--app", "A", "--devices", "1", "--duration", "5"], cores: 4))
        #expect(one.connections == 1 && one.threads == 1)
    }

    @Test func problemsAreOneLine() {
        let cases: [([String], String)] = [
            (["--devices", "x"], "--devices must be a whole number above 0, got 'x'"),
            (["--rate"], "--rate needs a value"),
            (["--rate", "0"], "--rate must be requests per second"),
            (["--onesignal", "1.5"], "--onesignal must be a fraction between 0 and 1"),
            (["--timeout", "-1"], "--timeout must be seconds above 0"),
            (["--allow-errors=yes"], "--allow-errors takes no value"),
            (["--ca", "x.pem"], "--ca needs an https:// target"),
            (["--seed", "-1"], "--seed must be a whole number"),
            (["--app", "has space"], "--app must be an application code"),
            (["--connections", "1000000"], "--connections must be at most 100000"),
            (["fleet"], "unknown option fleet"),
        ]
        for (extra, message) in cases {
            #expect(throws: FleetOptions.Problem.self) { try FleetOptions.parse(required + extra, cores: 2) }
            do {
                _ = try FleetOptions.parse(required + extra, cores: 2)
            } catch {
                #expect(error.description.hasPrefix(message) && !error.description.contains("\n"), "\(extra): \(error.description)")
            }
        }
    }
}
