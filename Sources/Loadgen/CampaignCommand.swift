import Core
import Foundation
import SDKClient

/// `herald-load campaign …`: creates a campaign through the Remote API, follows Herald's funnel and
/// the edge's `/stats` until the campaign is done, then prints and writes what happened.
enum CampaignCommand {
    /// Runs the command; returns the exit status (0 all sent, 1 failures or mismatches, 2 bad flags).
    static func main(_ arguments: [String]) -> Int32 {
        let options: CampaignOptions
        do {
            guard let parsed = try CampaignOptions.parse(arguments) else {
                print(CampaignOptions.usage)
                return 0
            }
            options = parsed
        } catch {
            return usageError(error.description)
        }
        if let path = options.jsonPath, let problem = FleetCommand.unwritable(path) { return usageError(problem) }
        var tls: TLSClientContext?
        if options.target.isTLS {
            do { tls = try TLSClientContext(caFile: options.caFile, verify: !options.insecure) } catch {
                return usageError(options.caFile != nil ? "--ca \(error.description)" : error.description)
            }
        }
        var edge: EdgeAdmin?
        if let directory = options.edgeDirectory {
            do { edge = try EdgeAdmin(directory: directory) } catch { return usageError("--edge-dir \(error.description)") }
        }
        do throws(Preflight.Problem) {
            try Preflight.check(target: options.target, app: options.app, tls: tls, timeoutSeconds: 10)
        } catch {
            return usageError(error.description)
        }
        let herald = HTTPClient(host: options.target.host, port: options.target.port, tls: tls)
        var follower = CampaignFollower(options: options, herald: herald, edge: edge)
        let terminal = ProcessSetup.standardOutputIsTerminal && options.progress
        let result = follower.run(progress: terminal ? { line in
            FileHandle.standardOutput.write(Data((ProgressLine.clear + line).utf8))
        } : nil)
        if terminal { FileHandle.standardOutput.write(Data(ProgressLine.clear.utf8)) }
        print(result.summary)
        var status: Int32 = result.failed && !options.allowErrors ? 1 : 0
        if let path = options.jsonPath {
            do {
                try Data(result.json.encoded() + [10]).write(to: URL(fileURLWithPath: path))
            } catch {
                FileHandle.standardError.write(Data("herald-load campaign: cannot write \(path): \(error.localizedDescription)\n".utf8))
                status = 1
            }
        }
        if result.failed && !options.allowErrors {
            FileHandle.standardError.write(Data("herald-load campaign: \(result.problems.joined(separator: "; ")) (exit 1; --allow-errors to accept)\n".utf8))
        }
        return status
    }

    static func usageError(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("herald-load campaign: \(message)\n".utf8))
        return 2
    }
}
