import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A throw-away PostgreSQL server for tests: a fresh cluster (`initdb -A trust -U herald`) in a
/// temporary folder, listening on its own free port on 127.0.0.1 and with its socket in that
/// folder, with `fsync` on like a real server. PostgreSQL refuses to run as root, so when the tests
/// run as root (CI) the folder is handed to the `postgres` system user and every server command
/// runs through `runuser -u postgres`. Every wait is bounded.
///
/// `shared()` is one server per test process, which tests share through a schema each
/// (`makeSchema`); a test that stops and restarts its server makes its own. A watchdog process
/// stops the server and removes the folder if the test process dies without doing so.
package final class PostgresServer: Sendable {
    package let folder: String
    package let port: UInt16
    private let binaries: String
    private let listenAddresses: String
    /// The watchdog process (see the type's documentation).
    private let watchdog: pid_t
    private let schemas = Atomic<Int>(0)

    /// Where `initdb`, `pg_ctl`, `postgres` and `psql` are: `HERALD_PG_BIN`, or the newest
    /// `/usr/lib/postgresql/<version>/bin` (Debian's layout).
    package static func binaryDirectory() throws -> String {
        if let directory = ProcessInfo.processInfo.environment["HERALD_PG_BIN"] { return directory }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted()
        guard let newest = versions.last(where: { FileManager.default.isExecutableFile(atPath: "\(root)/\($0)/bin/initdb") }) else {
            throw Failure(description: "PostgreSQL is not installed (no \(root)/<version>/bin/initdb; ops/install-deps --test installs it)")
        }
        return "\(root)/\(newest)/bin"
    }

    /// Creates the cluster and starts the server (about two seconds). It listens on 127.0.0.1 and
    /// on `address` when given, and lets clients of `network` (CIDR) in without a password, as it
    /// does those on loopback: a second "host" of a test. The role `passwordRole`, when given, must
    /// give its password (scram-sha-256) to connect over TCP.
    package init(alsoListeningOn address: String? = nil, trusting network: String? = nil, passwordRole: String? = nil) throws {
        listenAddresses = (["127.0.0.1"] + [address].compactMap { $0 }).joined(separator: ",")
        binaries = try Self.binaryDirectory()
        folder = NSTemporaryDirectory() + "herald-pg-" + UUID().uuidString.prefix(8)
        port = try HeraldProcesses.freePort()
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        if getuid() == 0 {
            guard let user = getpwnam("postgres") else {
                throw Failure(description: "running as root, but there is no postgres system user to run PostgreSQL as")
            }
            guard chown(folder, user.pointee.pw_uid, user.pointee.pw_gid) == 0 else {
                throw Failure(description: "cannot hand \(folder) to the postgres user")
            }
        }
        // It outlives this process if that dies: it then stops the server and removes the folder.
        let stop = Self.asServerUser([binaries + "/pg_ctl", "stop", "-D", folder + "/data", "-m", "immediate", "-w", "-t", "10"])
        watchdog = try Command.spawn(["/bin/sh", "-c", """
            while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done
            \(stop.map { "'\($0)'" }.joined(separator: " "))
            rm -rf '\(folder)'
            """], output: "/dev/null")
        // From here on, a failure runs `deinit`, which cleans up.
        // A language collation (ICU's en-US: a, A, a-b, ab, b, B, Z) as clusters made with a system
        // locale have, not C's byte order, so that anything Herald orders by text is seen to order
        // as SQLite does (byte order) whatever the operator's cluster sorts by.
        try run([binaries + "/initdb", "-D", folder + "/data", "-A", "trust", "-U", "herald", "-E", "UTF8", "--locale=C",
                 "--locale-provider=icu", "--icu-locale=en-US", "--no-sync", "--no-instructions"], timeout: 60)
        if network != nil || passwordRole != nil {
            // The first matching line wins: the password rule goes before initdb's trust lines.
            let path = folder + "/data/pg_hba.conf"
            let rules = try String(contentsOfFile: path, encoding: .utf8)
            let password = passwordRole.map { "host all \($0) all scram-sha-256\n" } ?? ""
            let trusted = network.map { "host all all \($0) trust\n" } ?? ""
            try (password + rules + trusted).write(toFile: path, atomically: false, encoding: .utf8)
        }
        try start()
    }

    deinit {
        stop(immediately: true)
        kill(watchdog, SIGKILL)
        waitpid(watchdog, nil, 0)
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Starts the server (again) and waits until it accepts connections (at most 30 s).
    package func start() throws {
        try run([binaries + "/pg_ctl", "start", "-D", folder + "/data", "-l", folder + "/server.log", "-w", "-t", "30", "-o",
                 "-k \(folder) -c listen_addresses=\(listenAddresses) -p \(port) -c fsync=on -c max_connections=300"],
                timeout: 40)
    }

    /// Stops the server: `fast` disconnects clients and shuts down cleanly; `immediately` is a
    /// crash as far as the data is concerned (recovery replays the WAL at the next start).
    package func stop(immediately: Bool = false) {
        _ = try? run([binaries + "/pg_ctl", "stop", "-D", folder + "/data", "-m", immediately ? "immediate" : "fast", "-w", "-t", "30"],
                     timeout: 40)
    }

    /// Kills the postmaster and every backend with SIGKILL, as the OOM killer or a power cut would:
    /// nothing is flushed or shut down, and the next `start()` recovers from the WAL.
    package func crash() throws {
        let processes = try serverProcesses()
        for process in processes { kill(process, SIGKILL) }
        let deadline = Date().addingTimeInterval(10)
        while processes.contains(where: Self.isAlive) {
            guard Date() < deadline else { throw Failure(description: "PostgreSQL processes survived SIGKILL for 10 s") }
            usleep(10_000)
        }
        // A killed postmaster leaves its lock files behind (the data folder's and the socket's).
        // Where init does not reap orphans (as in this sandbox) its pid stays a zombie that still
        // answers kill(pid, 0), which PostgreSQL would take for a running server; a reaping init
        // lets it see the files are stale by itself.
        unlink(folder + "/data/postmaster.pid")
        unlink(folder + "/.s.PGSQL.\(port).lock")
    }

    /// Stops (SIGSTOP) the postmaster and every backend: connections stay open and nothing
    /// answers, as with a frozen host or a network gone silent. `thaw()` resumes them.
    package func freeze() throws {
        for process in try serverProcesses() { kill(process, SIGSTOP) }
    }

    package func thaw() throws {
        for process in try serverProcesses() { kill(process, SIGCONT) }
    }

    /// The postmaster and its children (the backends and the server's own workers).
    private func serverProcesses() throws -> [pid_t] {
        let lockFile = folder + "/data/postmaster.pid"
        guard let text = try? String(contentsOfFile: lockFile, encoding: .utf8),
              let postmaster = text.split(separator: "\n").first.flatMap({ pid_t($0) }) else {
            throw Failure(description: "no running server (\(lockFile) unreadable)")
        }
        return [postmaster] + Self.children(of: postmaster)
    }

    /// The processes whose parent is `parent`, from /proc.
    private static func children(of parent: pid_t) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(pid_t.init).filter { pid in
            guard let fields = statFields(pid), fields.count > 1 else { return false }
            return pid_t(fields[1]) == parent
        }
    }

    /// Whether `pid` still runs (a zombie has ended: it only waits to be reaped).
    private static func isAlive(_ pid: pid_t) -> Bool {
        guard let state = statFields(pid)?.first else { return false }
        return state != "Z"
    }

    /// The fields of /proc/<pid>/stat after "pid (comm)": the state, then the parent's pid, …
    /// (nil when the process is gone).
    private static func statFields(_ pid: pid_t) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ")
    }

    /// A URL for the database `postgres` as the superuser `herald`, over TCP.
    package var url: String { "postgresql://herald@127.0.0.1:\(port)/postgres" }

    /// Creates an empty schema and returns a URL whose connections use it (`search_path`), so that
    /// tests sharing the server never see each other's tables.
    package func makeSchema() throws -> String {
        let name = "t\(schemas.add(1, ordering: .relaxed).newValue)"
        try psql("CREATE SCHEMA \(name)")
        return url + "?options=-csearch_path%3D\(name)"
    }

    /// Runs SQL with `psql` as `herald` through the server's socket.
    package func psql(_ sql: String) throws {
        try run([binaries + "/psql", "-X", "-q", "-h", folder, "-p", String(port), "-U", "herald", "-d", "postgres",
                 "-v", "ON_ERROR_STOP=1", "-c", sql], timeout: 30, asServerUser: false)
    }

    /// The server's log, for failure messages.
    package func log() -> String { (try? String(contentsOfFile: folder + "/server.log", encoding: .utf8)) ?? "" }

    // MARK: - The shared server

    private static let sharedServer = Mutex<PostgresServer?>(nil)

    /// The test process's shared server, started on first use and stopped when the process exits.
    package static func shared() throws -> PostgresServer {
        try sharedServer.withLock { server in
            if let server { return server }
            let started = try PostgresServer()
            server = started
            atexit { PostgresServer.stopShared() }
            return started
        }
    }

    private static func stopShared() {
        let server = sharedServer.withLock { server in
            defer { server = nil }
            return server
        }
        server?.stop(immediately: true)
    }

    // MARK: - Processes

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// `arguments`, run as the `postgres` user when this process is root.
    private static func asServerUser(_ arguments: [String]) -> [String] {
        getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + arguments : arguments
    }

    /// Runs a command to its end (killing it after `timeout` seconds); throws with its output when it fails.
    private func run(_ arguments: [String], timeout: TimeInterval, asServerUser: Bool = true) throws {
        let (status, output) = try Command.run(asServerUser ? Self.asServerUser(arguments) : arguments, timeout: timeout)
        guard status == 0 else {
            throw Failure(description: "\((arguments[0] as NSString).lastPathComponent) failed (status \(status)): \(output)")
        }
    }
}
