import Core
import Foundation
import HTTPServer
import SDKClient

/// `herald-load fleet …`: parses the flags, runs the fleet, prints and writes the results, and
/// says how the process should exit.
enum FleetCommand {
    /// Runs the command; returns the exit status (0 all succeeded, 1 failures or unwritable results, 2 bad flags).
    static func main(_ arguments: [String]) -> Int32 {
        let options: FleetOptions
        do {
            guard let parsed = try FleetOptions.parse(arguments, cores: ProcessInfo.processInfo.activeProcessorCount) else {
                print(FleetOptions.usage)
                return 0
            }
            options = parsed
        } catch {
            return usageError(error.description)
        }
        let addresses: [SocketAddress]
        do {
            addresses = try options.target.resolve()
        } catch {
            return usageError("--target \(error.description)")
        }
        var tls: TLSClientContext?
        if options.target.isTLS {
            do {
                tls = try TLSClientContext(caFile: options.caFile, verify: !options.insecure)
            } catch {
                return usageError(options.caFile != nil ? "--ca \(error.description)" : error.description)
            }
        }
        for path in [options.jsonPath, options.reportPath].compactMap({ $0 }) {
            if let problem = unwritable(path) { return usageError(problem) }
        }
        let heraldVersion: String?
        do throws(Preflight.Problem) {
            heraldVersion = try Preflight.check(target: options.target, app: options.app, tls: tls, timeoutSeconds: options.timeoutSeconds)
        } catch {
            return usageError(error.description)
        }
        ProcessSetup.raiseOpenFileLimit()
        let schedule = options.stages.map { OpenLoopSchedule(stages: $0, connections: options.connections) }
            ?? options.rate.map { OpenLoopSchedule(rate: $0, connections: options.connections) }
        let plan = FleetPlan(options: options, addresses: addresses, tls: tls, schedule: schedule)
        let run = FleetRun(plan: plan, start: MonotonicClock.now() + 10_000_000)
        InterruptHandler.start(run.control)
        var metricsServer: HTTPServer?
        if let listen = options.metricsListen {
            var settings = HTTPSettings()
            settings.host = listen.host
            settings.port = listen.port
            settings.threads = 1
            let probe = run.probe
            let server = HTTPServer(settings: settings) { request in
                guard request.method == "GET", request.path == "/metrics" else { return .text("not found: GET /metrics\n", status: 404) }
                let elapsed = Double(MonotonicClock.now() - probe.start) / 1e9
                return .text(LoadMetrics.render(probe.snapshot(), options: options, elapsed: elapsed),
                             contentType: "text/plain; version=0.0.4; charset=utf-8")
            }
            do { try server.start() } catch { return usageError("--metrics-listen \(listen.host):\(listen.port): \(error)") }
            metricsServer = server
        }
        defer { metricsServer?.stop() }

        let terminal = ProcessSetup.standardOutputIsTerminal && options.progress
        if terminal {
            let mode = options.modeDescription
            print("herald-load fleet: \(options.target), \(TextFormat.grouped(options.devices)) devices, \(options.connections) connections, "
                + "\(options.threads) threads, \(TextFormat.fixed(options.durationSeconds, 1)) s, \(mode) (Ctrl-C ends it early)")
        }
        let startedAt = Date()
        var result = run.run(progress: terminal ? { line in
            FileHandle.standardOutput.write(Data((ProgressLine.clear + line).utf8))
        } : nil)
        if terminal { FileHandle.standardOutput.write(Data(ProgressLine.clear.utf8)) }
        result.startedAt = startedAt
        result.heraldVersion = heraldVersion

        print(SummaryTable.render(result))
        return conclude(result, thresholds: options.thresholds, jsonPath: options.jsonPath, reportPath: options.reportPath, command: "fleet")
    }

    /// After the summary (of a run, or of merged runs): judges the thresholds and prints their
    /// table, writes the JSON and the report, says what failed; returns the exit status.
    static func conclude(_ result: FleetResult, thresholds: [Threshold], jsonPath: String?, reportPath: String?, command: String) -> Int32 {
        let verdicts = Threshold.evaluate(thresholds, on: result)
        if !verdicts.isEmpty { print(Threshold.table(verdicts)) }
        let unmet = verdicts.filter { !$0.passed }
        var status: Int32 = result.failed || !unmet.isEmpty ? 1 : 0
        let outputs: [(String?, () -> [UInt8])] = [(jsonPath, { result.json(thresholds: verdicts).encoded() + [10] }),
                                                   (reportPath, { Array(HTMLReport.render(result).utf8) })]
        for case let (path?, render) in outputs {
            do {
                try Data(render()).write(to: URL(fileURLWithPath: path))
            } catch {
                FileHandle.standardError.write(Data("herald-load \(command): cannot write \(path): \(error.localizedDescription)\n".utf8))
                status = 1
            }
        }
        if !unmet.isEmpty {
            FileHandle.standardError.write(Data(("herald-load \(command): thresholds failed: "
                + unmet.map { "\($0.threshold) (\($0.threshold.format($0.value)))" }.joined(separator: ", ") + "\n").utf8))
        }
        if result.failed {
            FileHandle.standardError.write(Data(
                "herald-load \(command): \(TextFormat.grouped(result.stats.failed)) requests failed (exit 1; --allow-errors to accept)\n".utf8))
        }
        return status
    }

    static func usageError(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("herald-load fleet: \(message)\n".utf8))
        return 2
    }

    /// Why `path` cannot be written (its folder is missing or read-only), or nil.
    static func unwritable(_ path: String) -> String? {
        let folder = (path as NSString).deletingLastPathComponent
        let directory = folder.isEmpty ? "." : folder
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            return "cannot write \(path): no folder \(directory)"
        }
        guard FileManager.default.isWritableFile(atPath: directory) else { return "cannot write \(path): \(directory) is not writable" }
        return nil
    }
}
