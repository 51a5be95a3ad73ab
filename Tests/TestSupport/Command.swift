import Foundation

/// Commands spawned and reaped here directly, not with Foundation's `Process`, so that every wait
/// has a deadline: a `Process` whose exit its monitor missed (seen once in a busy test run: a
/// 0.5-second script "still running" after 20 s, and `waitUntilExit` never returning after
/// SIGKILL) would hang the whole run.
package enum Command {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// Starts `arguments` with standard input from /dev/null and its output and errors to `output`.
    package static func spawn(_ arguments: [String], output: String) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, arguments[0], &actions, nil, argv, environ)
        guard result == 0 else { throw Failure(description: "cannot start \(arguments[0]): error \(result)") }
        return pid
    }

    /// Runs `arguments` to its end, killing it after `timeout` seconds (then throwing); returns its
    /// exit status (or 128 + the signal that ended it) and its output and errors together.
    package static func run(_ arguments: [String], timeout: TimeInterval) throws -> (status: Int32, output: String) {
        let outputPath = NSTemporaryDirectory() + "herald-command-" + UUID().uuidString
        defer { unlink(outputPath) }
        let pid = try spawn(arguments, output: outputPath)
        let name = (arguments[0] as NSString).lastPathComponent
        let deadline = Date().addingTimeInterval(timeout)
        var status: Int32 = 0
        while waitpid(pid, &status, WNOHANG) == 0 {
            guard Date() < deadline else {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                throw Failure(description: "\(name) did not finish within \(Int(timeout)) s")
            }
            usleep(10_000)
        }
        let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        // The low seven bits hold a terminating signal, if any; else the exit status is above them.
        return (status & 0x7F != 0 ? 128 + (status & 0x7F) : (status >> 8) & 0xFF, output)
    }
}
