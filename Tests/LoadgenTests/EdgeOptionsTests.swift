@testable import Loadgen
import SDKClient
import Testing

/// The edge's and the campaign's command lines: what each flag sets, and one-line refusals.
struct EdgeOptionsTests {
    func refusal(_ arguments: [String]) -> String? {
        do { _ = try EdgeOptions.parse(arguments, cores: 2) } catch { return error.description }
        return nil
    }

    @Test func defaultsAndFlags() throws {
        let plain = try #require(try EdgeOptions.parse(["--dir", "edge"], cores: 4))
        #expect(plain.directory == "edge" && plain.apnsPort == 0 && plain.fcmPort == 0 && plain.latencyMilliseconds == 0)
        #expect(plain.threads == 4 && plain.reportTo == nil && plain.openRate == 0 && plain.reportDelaySeconds == 1)
        let full = try #require(try EdgeOptions.parse([
            "--dir=e", "--apns-port", "2197", "--fcm-port", "4443", "--admin-port", "9000", "--latency-ms", "50", "-t", "3",
            "--dead-tokens", "dead.txt", "--report-to", "http://127.0.0.1:8080", "--app", "ABCDE-12345", "--open-rate", "0.3",
            "--report-delay", "0.2", "--fleet-devices", "1000", "--fleet-seed", "7", "--fleet-onesignal", "0.1",
        ], cores: 2))
        #expect(full.apnsPort == 2197 && full.fcmPort == 4443 && full.adminPort == 9000 && full.latencyMilliseconds == 50 && full.threads == 3)
        #expect(full.deadTokensPath == "dead.txt" && full.reportTo == TargetURL(isTLS: false, host: "127.0.0.1", port: 8080))
        #expect(full.app == "ABCDE-12345" && full.openRate == 0.3 && full.reportDelaySeconds == 0.2)
        #expect(full.fleetDevices == 1000 && full.fleetSeed == 7 && full.fleetOneSignal == 0.1)
        #expect(try EdgeOptions.parse(["--help"], cores: 2) == nil)
    }

    @Test func badFlagsSayWhatIsWrong() throws {
        #expect(refusal([]) == "--dir DIR is required (where the edge keeps its keys, certificates and edge.json)")
        #expect(refusal(["--dir", "e", "--apns-port", "70000"]) == "--apns-port must be a port number (0 to 65535), got '70000'")
        #expect(refusal(["--dir", "e", "--apns-port", "5000", "--fcm-port", "5000"]) == "--apns-port, --fcm-port, --web-port and --admin-port must differ")
        #expect(refusal(["--dir", "e", "--latency-ms", "-1"]) == "--latency-ms must be milliseconds between 0 and 60000, got '-1'")
        #expect(refusal(["--dir", "e", "--open-rate", "1.5"]) == "--open-rate must be a fraction between 0 and 1, got '1.5'")
        #expect(refusal(["--dir", "e", "--open-rate", "0.5"]) == "--open-rate only matters with --report-to URL")
        #expect(refusal(["--dir", "e", "--report-to", "http://h:1", "--hwids", "f"]) == "--report-to needs --app CODE (the application the devices report to)")
        #expect(refusal(["--dir", "e", "--report-to", "http://h:1", "--app", "A"])?.hasPrefix("--report-to needs the devices' hwids") == true)
        #expect(refusal(["--dir", "e", "--report-to", "ftp://h"])?.hasPrefix("--report-to ") == true)
        #expect(refusal(["--dir", "e", "--bogus"]) == "unknown option --bogus (see herald-load edge --help)")
        #expect(refusal(["--dir"]) == "--dir needs a value")
        #expect(refusal(["--dir", "e", "--print-app-config", "A", "--apns-port", "1"])
            == "--print-app-config reads DIR/edge.json and takes only --dir, not --apns-port")
        #expect(refusal(["--dir", "e", "--print-app-config", "A B"])?.hasPrefix("--print-app-config must be an application code") == true)
        #expect(try EdgeOptions.parse(["--print-app-config", "ABCDE-12345", "--dir", "e"], cores: 2)?.printAppConfig == "ABCDE-12345")
    }
}

struct CampaignOptionsTests {
    let required = ["--target", "http://127.0.0.1:8080", "--app", "ABCDE-12345", "--token", "secret"]

    func refusal(_ arguments: [String]) -> String? {
        do { _ = try CampaignOptions.parse(arguments) } catch { return error.description }
        return nil
    }

    @Test func defaultsAndFlags() throws {
        let plain = try #require(try CampaignOptions.parse(required))
        #expect(plain.app == "ABCDE-12345" && plain.token == "secret" && plain.conditions == nil && plain.timeoutSeconds == 600)
        let full = try #require(try CampaignOptions.parse(required + [
            "--conditions", #"[["City", "EQ", "Paris"]]"#, "--edge-dir", "edge", "--json", "c.json", "--content", "Hi",
            "--timeout", "2m", "--allow-errors", "-q",
        ]))
        #expect(full.conditions == [["City", "EQ", "Paris"]] && full.edgeDirectory == "edge" && full.jsonPath == "c.json")
        #expect(full.content == "Hi" && full.timeoutSeconds == 120 && full.allowErrors && !full.progress)
    }

    @Test func badFlagsSayWhatIsWrong() {
        #expect(refusal(["--app", "A", "--token", "t"])?.hasPrefix("--target URL is required") == true)
        #expect(refusal(["--target", "http://h:1", "--token", "t"])?.hasPrefix("--app CODE is required") == true)
        #expect(refusal(["--target", "http://h:1", "--app", "A"])?.hasPrefix("--token API_TOKEN is required") == true)
        #expect(refusal(required + ["--conditions", "{}"])?.hasPrefix("--conditions must be a JSON array") == true)
        #expect(refusal(required + ["--ca", "ca.pem"]) == "--ca needs an https:// target")
        #expect(refusal(required + ["--timeout", "soon"])?.hasPrefix("--timeout must be seconds") == true)
    }
}

/// When the edge saw the first push, half, 99 % and all of a campaign.
struct CampaignTimelineTests {
    @Test func milestonesComeFromTheSamples() {
        var timeline = CampaignTimeline()
        #expect(timeline.time(reaching: 0) == nil && timeline.pushesPerSecond == nil)
        for (seconds, pushes) in [(0.1, 0), (0.2, 10), (0.3, 10), (0.5, 500), (0.7, 990), (0.9, 1000)] {
            timeline.record(seconds: seconds, pushes: pushes)
        }
        #expect(timeline.total == 1000)
        #expect(timeline.time(reaching: 0) == 0.2)
        #expect(timeline.time(reaching: 0.5) == 0.5)
        #expect(timeline.time(reaching: 0.99) == 0.7)
        #expect(timeline.time(reaching: 1) == 0.9)
        #expect(abs((timeline.pushesPerSecond ?? 0) - 1000 / 0.7) < 1e-6)
        #expect(timeline.perSecond == [1000])
    }

    @Test func pushesArePerWholeSecond() {
        var timeline = CampaignTimeline()
        #expect(timeline.perSecond.isEmpty)
        for (seconds, pushes) in [(0.5, 0), (0.95, 100), (1.0, 150), (1.6, 400), (3.2, 900), (4.0, 1000)] {
            timeline.record(seconds: seconds, pushes: pushes)
        }
        // [0, 1): 100; [1, 2): 300; [2, 3): none; [3, 4]: 600, the last sample included.
        #expect(timeline.perSecond == [100, 300, 0, 600])
        #expect(timeline.perSecond.reduce(0, +) == timeline.total)
    }
}
