import Foundation
import HTTP2Server
import Testing
import TestSupport

/// The HTTP/2 server with real TLS on loopback, driven by curl and openssl: certificates from its own
/// CA, whole request bodies larger than the flow-control windows, answers held back, ALPN h2 only,
/// and the counters of what clients did.
@Suite(.serialized) struct HTTP2ServerTests {
    /// Echoes the request: method, path and a header in response headers, the body as the body.
    struct Echo: HTTP2Handler {
        func respond(to request: HTTP2Request, context: HTTP2ConnectionContext) -> HTTP2Response {
            HTTP2Response(status: request.method == "POST" ? 201 : 200,
                          headers: [("x-method", request.method), ("x-path", request.path), ("x-listener", String(context.listener)),
                                    ("x-topic", request.header("apns-topic") ?? "-")],
                          body: request.body)
        }
    }

    let directory: TemporaryDirectory
    var folder: String { directory.path }
    let server: HTTP2Server

    init() throws {
        directory = try TemporaryDirectory()
        let folder = directory.path
        let authority = try CertificateAuthority(name: "test CA")
        let issued = try authority.serverCertificate(commonName: "test", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"])
        try authority.certificatePEM.write(toFile: folder + "/ca.pem", atomically: true, encoding: .utf8)
        try (issued.certificatePEM + authority.certificatePEM).write(toFile: folder + "/server.pem", atomically: true, encoding: .utf8)
        try issued.key.privatePEM().write(toFile: folder + "/server-key.pem", atomically: true, encoding: .utf8)
        let tls = try TLSServerContext(certificateChain: folder + "/server.pem", privateKey: folder + "/server-key.pem")
        server = try HTTP2Server(listeners: [.init(port: 0), .init(port: 0)], tls: tls, threads: 2, responseDelayNanoseconds: 50_000_000)
        server.start(handler: Echo())
    }

    func stop() { server.stop() }

    /// Runs curl (at most 20 s); returns its exit status and standard output.
    func curl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-s", "--max-time", "20", "--cacert", folder + "/ca.pem"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    /// Runs `openssl s_client` against `port` offering h2, writes `input` to it raw, and ends it a
    /// second later (the session tickets have arrived by then); returns its output.
    ///
    /// Its output goes to a file, and it is stopped if it has not ended 5 s after its input did: a
    /// process another test starts meanwhile can inherit the pipes' ends, and then neither s_client
    /// nor a reader of a pipe would ever see an end of file.
    func openSSLClient(port: UInt16, input: [UInt8], extra: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_client", "-connect", "127.0.0.1:\(port)", "-alpn", "h2", "-nocommands", "-CAfile", folder + "/ca.pem"] + extra
        let stdin = Pipe()
        let outputPath = folder + "/s_client-\(UUID().uuidString).out"
        try #require(FileManager.default.createFile(atPath: outputPath, contents: nil), "cannot create \(outputPath)")
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
        process.standardInput = stdin
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        stdin.fileHandleForWriting.write(Data(input))
        Thread.sleep(forTimeInterval: 1)
        try stdin.fileHandleForWriting.close()
        for _ in 0..<50 where process.isRunning { Thread.sleep(forTimeInterval: 0.1) }
        // Still running after its input ended: the write end of its stdin may live on in a process
        // another test spawned meanwhile, and it inherits this thread's blocked signals, SIGTERM
        // among them, so only SIGKILL is sure to end it.
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try output.close()
        return String(decoding: try Data(contentsOf: URL(fileURLWithPath: outputPath)), as: UTF8.self)
    }

    @Test func countsPingsResetsAndResumedSessions() throws {
        defer { stop() }
        let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)
        let settings: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 0, 0]
        let ping: [UInt8] = [0, 0, 8, 6, 0, 0, 0, 0, 0] + Array(repeating: 7, count: 8)
        // A reset of a stream the session does not know: left out before nghttp2, but counted.
        let reset: [UInt8] = [0, 0, 4, 3, 0, 0, 0, 0, 1, 0, 0, 0, 8]
        let session = folder + "/session.pem"
        let first = try openSSLClient(port: server.ports[0], input: preface + settings + ping + reset + ping, extra: ["-sess_out", session])
        #expect(first.contains("New, TLS"), "\(first.prefix(300))")
        let second = try openSSLClient(port: server.ports[0], input: preface + settings, extra: ["-sess_in", session])
        #expect(second.contains("Reused, TLS"), "\(second.prefix(300))")
        #expect(server.counters.pingsReceived == 2)
        #expect(server.counters.resetsReceived == 1)
        #expect(server.counters.sessionsResumed == 1)
        #expect(server.acceptedConnections == 2)
    }

    @Test func answersOverHTTP2AndTLSWithTheWholeBody() throws {
        defer { stop() }
        // 300 KB: more than the 64 KB default windows, so flow control has to work both ways.
        let body = String(repeating: "0123456789abcdef", count: 19_200)
        try body.write(toFile: folder + "/body.txt", atomically: true, encoding: .utf8)
        let (status, output) = try curl(["--http2", "-D", "-", "-X", "POST", "-H", "apns-topic: com.example.shop",
                                         "--data-binary", "@" + folder + "/body.txt", "https://127.0.0.1:\(server.ports[1])/3/device/abc?x=1"])
        #expect(status == 0, "\(output.prefix(500))")
        let parts = output.components(separatedBy: "\r\n\r\n")
        let head = parts[0].lowercased()
        #expect(head.hasPrefix("http/2 201"), "\(head)")
        #expect(head.contains("x-method: post") && head.contains("x-path: /3/device/abc?x=1") && head.contains("x-listener: 1"))
        #expect(head.contains("x-topic: com.example.shop") && head.contains("content-length: \(body.utf8.count)"))
        #expect(parts.dropFirst().joined(separator: "\r\n\r\n") == body)
        #expect(server.acceptedConnections == 1)
    }

    @Test func manyStreamsOnOneConnectionAreEachAnswered() throws {
        defer { stop() }
        let url = "https://localhost:\(server.ports[0])/stream"
        // curl multiplexes parallel transfers to one host over one HTTP/2 connection.
        let (status, output) = try curl(["--http2", "--parallel", "--parallel-max", "50", "-w", "%{http_code}\n", "-o", "/dev/null"]
            + Array(repeating: url, count: 50))
        #expect(status == 0)
        #expect(output.split(separator: "\n") == Array(repeating: "200", count: 50))
        #expect(server.acceptedConnections == 1)
    }

    @Test func aClientWithoutH2IsRefusedAtTheHandshake() throws {
        defer { stop() }
        let (status, _) = try curl(["--http1.1", "https://127.0.0.1:\(server.ports[0])/"])
        #expect(status != 0)
        // The same server over h2 answers.
        let ok = try curl(["--http2", "-o", "/dev/null", "-w", "%{http_code}", "https://127.0.0.1:\(server.ports[0])/"])
        #expect(ok.status == 0 && ok.output == "200")
    }
}
