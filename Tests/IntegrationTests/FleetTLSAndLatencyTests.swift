import Foundation
import Core
import SDKClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// herald-load over HTTPS (the test CA, the system store, --insecure), and its open loop showing
/// a slow server as latency instead of hiding it (no coordinated omission).
@Suite(.serialized, .fixedBackend("herald-load runs against mock targets, without Herald or a database"))
struct FleetTLSAndLatencyTests {
    /// A Python HTTPS server answering the Pushwoosh envelope, with the test PKI's certificate
    /// (127.0.0.1 and localhost).
    static let server = """
        import ssl, sys, socketserver, http.server
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = b'{"status_code":200,"status_message":"OK","response":null}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args): pass
        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
        server = Server(("127.0.0.1", int(sys.argv[1])), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[2], sys.argv[3])
        server.socket = context.wrap_socket(server.socket, server_side=True)
        server.serve_forever()
        """

    func run(_ arguments: [String]) throws -> (status: Int32, output: String, results: JSON) {
        let folder = try TemporaryDirectory()
        let json = folder.file("out.json")
        let (status, output) = try FleetTests.fleet(["--app", "ABCDE-12345", "--devices", "20", "--threads", "1", "--json", json] + arguments,
                                                    limit: 30)
        return (status, output, (try? JSON.parse(Data(contentsOf: URL(fileURLWithPath: json)))) ?? .null)
    }

    @Test func httpsTargetsAreVerified() throws {
        let pki = try TestPKI.shared()
        let folder = try TemporaryDirectory()
        try Data(Self.server.utf8).write(to: URL(fileURLWithPath: folder.file("https.py")))
        let port = try HeraldProcesses.freePort()
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", folder.file("https.py"), String(port), pki + "/server.pem", pki + "/server.key"]
        try python.run()
        defer {
            kill(python.processIdentifier, SIGKILL)
            python.waitUntilExit()
        }
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let probe = try? ClientSocket.connect(to: TargetURL(parsing: "http://127.0.0.1:\(port)").resolve()[0])
            usleep(100_000)
            if let probe, probe.finishConnect() == nil { break }
        }
        let common = ["--duration", "1", "--connections", "2", "--rate", "40"]
        /// Every scheduled request either ran (the total) or was still waiting for a slow reply (dropped).
        func scheduled(_ results: JSON) -> Int64 {
            (results["total"]?["requests"]?.lenientInt ?? 0) + (results["dropped"]?.lenientInt ?? 0)
        }
        // The test CA: every request succeeds, by IP address and by name.
        for host in ["127.0.0.1", "localhost"] {
            let trusted = try run(["--target", "https://\(host):\(port)", "--ca", pki + "/ca.pem"] + common)
            #expect(trusted.status == 0, "\(trusted.output)")
            #expect(scheduled(trusted.results) == 40 && trusted.results["errors"] == [:], "\(trusted.output)")
            // Every request that ran succeeded (how many ran in the second depends on the machine's load).
            let ok = trusted.results["total"]?["ok"]?.lenientInt ?? 0
            #expect(ok > 0 && ok == trusted.results["total"]?["requests"]?.lenientInt, "\(trusted.output)")
        }
        // The system store does not know the test CA: the pre-flight fails with OpenSSL's reason, exit 2.
        let untrusted = try run(["--target", "https://127.0.0.1:\(port)"] + common)
        #expect(untrusted.status == 2 && untrusted.output.split(separator: "\n").count == 1, "\(untrusted.output)")
        #expect(untrusted.output.contains("cannot reach --target") && untrusted.output.contains("certificate"), "\(untrusted.output)")
        // --insecure accepts it.
        let insecure = try run(["--target", "https://127.0.0.1:\(port)", "--insecure"] + common)
        #expect(insecure.status == 0 && scheduled(insecure.results) == 40 && insecure.results["errors"] == [:], "\(insecure.output)")
        // The blocking test client speaks HTTPS too, and refuses what it cannot verify.
        let client = DeviceAPIClient(host: "localhost", port: port, tls: try TLSClientContext(caFile: pki + "/ca.pem"))
        #expect(try client.call("getTags", ["application": "ABCDE-12345", "hwid": "x"]).body["status_code"] == 200)
        #expect(try client.call("setTags", ["application": "ABCDE-12345", "hwid": "x", "tags": ["a": 1]]).status == 200)
        do {
            _ = try HTTPClient(port: port, tls: try TLSClientContext()).request("POST", "/json/1.3/getTags", body: Array("{}".utf8))
            Issue.record("the system store should not trust the test CA")
        } catch {
            #expect("\(error)".contains("certificate rejected"), "\(error)")
        }
        // Cleartext HTTP to the TLS port is not a crash either: the pre-flight says the target is wrong.
        let plain = try run(["--target", "http://127.0.0.1:\(port)", "--timeout", "1"] + common)
        #expect(plain.status == 2 && plain.output.contains("--target http://127.0.0.1:\(port)"), "\(plain.output)")
    }

    @Test func aSlowServerShowsAsLatencyInTheOpenLoop() throws {
        // Every reply takes 100 ms: one connection can answer 10 requests a second, but 50 are
        // scheduled. Latency from the scheduled start grows while the backlog builds; the closed
        // loop (which waits for each reply) would report 100 ms.
        let server = try CannedHTTPServer(.slow(seconds: 0.1, status: 200, body: "{\"status_code\":200,\"status_message\":\"OK\"}"), preflight: true)
        let open = try run(["--target", "http://127.0.0.1:\(server.port)", "--duration", "2", "--connections", "1", "--rate", "50"])
        #expect(open.status == 0, "\(open.output)")
        let total = try #require(open.results["total"])
        let sent = total["requests"]?.lenientInt ?? 0
        #expect((12...22).contains(sent), "\(open.output)")
        #expect(open.results["dropped"]?.lenientInt == 100 - sent, "\(open.output)")
        // The last reply came about 2 s after its scheduled start (0.4 s), the first after 0.1 s.
        #expect((total["max_ms"]?.lenientDouble ?? 0) > 1500, "\(open.output)")
        #expect((total["p50_ms"]?.lenientDouble ?? 0) > 700, "\(open.output)")
        #expect(open.output.contains("scheduled requests never started"))

        let closed = try run(["--target", "http://127.0.0.1:\(server.port)", "--duration", "1", "--connections", "1"])
        let closedMax = closed.results["total"]?["max_ms"]?.lenientDouble ?? 0
        #expect(closedMax >= 100 && closedMax < 1000, "\(closed.output)")
    }
}
