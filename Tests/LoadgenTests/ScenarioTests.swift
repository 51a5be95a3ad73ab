import Core
import Foundation
@testable import Loadgen
import Testing
import TestSupport

/// `--scenario FILE`: the shipped default file is the built-in model, a file changes what the fleet
/// does, flags override it, and a bad file is refused naming the key.
struct ScenarioTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path
    static let defaultFile = root + "/ops/load/default-scenario.json"
    let required = ["--target", "http://127.0.0.1:8080", "--app", "ABCDE-12345", "--devices", "1000", "--duration", "30"]

    let folder: TemporaryDirectory

    init() throws { folder = try TemporaryDirectory() }

    func file(_ text: String) throws -> String {
        let path = folder.path + "/scenario.json"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The dotted paths of a JSON object's leaves.
    func keys(_ json: JSON, _ prefix: String = "") -> Set<String> {
        guard case .object(let members) = json else { return [prefix] }
        return members.reduce(into: []) { $0.formUnion(keys($1.value, prefix.isEmpty ? $1.key : prefix + "." + $1.key)) }
    }

    @Test func theShippedDefaultFileIsTheBuiltInModel() throws {
        #expect(try Scenario(path: Self.defaultFile) == Scenario.builtIn)
        // Every key of the model is in the file: the file is complete, not just matching by default.
        let written = try JSON.parse(Data(contentsOf: URL(fileURLWithPath: Self.defaultFile)))
        #expect(keys(written) == keys(Scenario.builtIn.json), "\(written.text)")
        #expect(try Scenario(json: Scenario.builtIn.json) == .builtIn)
        let options = try #require(try FleetOptions.parse(required, cores: 2))
        #expect(options.scenario == .builtIn && options.scenarioPath == nil)
    }

    @Test func aFileChangesTheFleetsDevicesAndSessions() throws {
        let path = try file("""
            {"platforms": {"ios": 1}, "opt_out": 0, "tag_churn": 1,
             "calls": {"purchase": 1, "screens_per_session": 1, "custom_events": {"one": 0, "two": 0}, "session_end": {"idle": 0, "exit": 1}}}
            """)
        let scenario = try Scenario(path: path)
        #expect(scenario.oneSignalShare == Scenario.builtIn.oneSignalShare && scenario.iosShare == 1 && scenario.screensPerSession == 1)
        for index in 0..<300 {
            let device = FleetDevice(seed: 2, index: index, scenario: scenario)
            #expect(device.isIOS && !device.optedOut)
            let steps = SessionScript.steps(of: device, session: 2, scenario: scenario)
            #expect(steps.filter { if case .screen = $0 { true } else { false } }.count == 1, "\(steps)")
            #expect(steps.contains { if case .purchase = $0 { true } else { false } })
            #expect(steps.contains { if case .setTags = $0 { true } else { false } })
            #expect(!steps.contains { if case .custom = $0 { true } else { false } })
            #expect(steps.last.map { if case .exit = $0 { true } else { false } } == true, "\(steps)")
        }
    }

    @Test func flagsGivenOverrideTheFile() throws {
        let path = try file(#"{"platforms": {"web": 0.5, "huawei": 0.2}, "onesignal": 0.3}"#)
        let fromFile = try #require(try FleetOptions.parse(required + ["--scenario", path, "--web-push", "https://127.0.0.1:9443"], cores: 2))
        #expect(fromFile.webFraction == 0.5 && fromFile.huaweiFraction == 0.2 && fromFile.oneSignalFraction == 0.3)
        #expect(fromFile.scenario.tagChurn == Scenario.builtIn.tagChurn)
        // The flags win wherever they stand on the command line.
        let flags = try #require(try FleetOptions.parse(required + ["--web", "0.1", "--onesignal", "0", "--scenario", path,
                                                                    "--web-push", "https://127.0.0.1:9443"], cores: 2))
        #expect(flags.webFraction == 0.1 && flags.huaweiFraction == 0.2 && flags.oneSignalFraction == 0)
        // The edge reads the same file for the fleet's devices, with the same overrides.
        let edge = try #require(try EdgeOptions.parse(["--dir", "e", "--fleet-scenario", path, "--fleet-huawei", "0.1", "--web-port", "9443"], cores: 2))
        #expect(edge.fleetScenario.webShare == 0.5 && edge.fleetHuawei == 0.1 && edge.fleetOneSignal == 0.3 && edge.webPort == 9443)
        #expect(throws: FleetOptions.Problem("--fleet-scenario: cannot read \(path).missing")) {
            try EdgeOptions.parse(["--dir", "e", "--fleet-scenario", path + ".missing"], cores: 2)
        }
        #expect(throws: FleetOptions.Problem("browsers (--web or the scenario's platforms.web) need --web-push URL: the edge's web_push_url")) {
            try FleetOptions.parse(required + ["--scenario", path], cores: 2)
        }
        #expect(throws: FleetOptions.Problem("--web-push must be a push service's https://HOST:PORT (edge.json's web_push_url), got 'http://h:1'")) {
            try FleetOptions.parse(required + ["--web", "0.1", "--web-push", "http://h:1"], cores: 2)
        }
        #expect(throws: FleetOptions.Problem(#"--web-push must be a push service's https://HOST:PORT (edge.json's web_push_url), got 'https://h":1'"#)) {
            try FleetOptions.parse(required + ["--web", "0.1", "--web-push", #"https://h":1"#], cores: 2)
        }
    }

    @Test(arguments: [
        (#"{"platforms": {"andriod": 0.5}}"#, "unknown key platforms.andriod"),
        (#"{"opt_out": 0.99}"#, "opt_out must be a fraction from 0 to 0.95, got 0.99"),
        (#"{"calls": {"purchase": "often"}}"#, #"calls.purchase must be a fraction from 0 to 1, got "often""#),
        (#"{"calls": {"screens_per_session": 0}}"#, "calls.screens_per_session must be a whole number from 1 to 20, got 0"),
        (#"{"calls": {"session_end": {"idle": 0.5, "exit": 0.6}}}"#, "calls.session_end.idle and calls.session_end.exit share one draw"),
        (#"{"calls": 3}"#, "calls must be an object"),
        (#"[1]"#, "the file must hold a JSON object"),
        (#"{"platforms": "#, "not JSON"),
    ]) func aBadFileIsRefusedNamingTheKey(_ text: String, _ problem: String) throws {
        let path = try file(text)
        do {
            _ = try FleetOptions.parse(required + ["--scenario", path], cores: 2)
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.description.hasPrefix("--scenario \(path): \(problem)"), "\(error.description)")
        }
        #expect(throws: FleetOptions.Problem("--scenario: cannot read \(path).missing")) {
            try FleetOptions.parse(required + ["--scenario", path + ".missing"], cores: 2)
        }
    }
}
