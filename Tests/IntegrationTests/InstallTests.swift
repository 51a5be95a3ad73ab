import Foundation
import Core
import SDKClient
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `ops/install` into a temporary folder standing for a machine's root: the user, the folders and
/// their modes, the configuration, the units and binaries that run.
@Suite(.fixedBackend("ops/install lays out files and uses no database"))
struct InstallTests {
    @Test func opsInstallLaysOutAMachine() throws {
        #expect(getuid() == 0, "ops/install creates a user and sets owners; CI runs as root")
        let root = try TemporaryDirectory()
        try FileManager.default.createDirectory(atPath: root.file("etc"), withIntermediateDirectories: true)
        for file in ["passwd", "group", "shadow", "gshadow"] {
            try FileManager.default.copyItem(atPath: "/etc/" + file, toPath: root.file("etc/" + file))
        }
        let output = try runTool("/bin/bash", [Repository.root + "/ops/install", "--root", root.path, "--from", HeraldProcesses.binaryDirectory],
                                 timeout: 60)
        #expect(output.contains("installed Herald"), "\(output)")

        let passwd = try String(contentsOfFile: root.file("etc/passwd"), encoding: .utf8)
        let entry = try #require(passwd.split(separator: "\n").first { $0.hasPrefix("herald:") }, "no herald user")
        let uid = Int(entry.split(separator: ":")[2]) ?? -1
        func attributes(_ path: String) throws -> (mode: Int, owner: Int) {
            let info = try FileManager.default.attributesOfItem(atPath: root.file(path))
            return ((info[.posixPermissions] as? Int) ?? -1, (info[.ownerAccountID] as? Int) ?? -1)
        }
        #expect(try attributes("usr/local/bin/herald-ingest").mode == 0o755)
        #expect(try attributes("usr/local/bin/herald-worker").mode == 0o755)
        #expect(try attributes("etc/herald").mode == 0o750)
        #expect(try attributes("etc/herald/herald.json").mode == 0o640)
        #expect(try attributes("var/lib/herald") == (0o750, uid))
        // The package's units, pointed at the binaries ops/install lays out; none in /etc, where the
        // operator's drop-ins live.
        for unit in ["herald-ingest.service", "herald-worker@.service", "herald-backup.service", "herald-backup.timer"] {
            #expect(FileManager.default.fileExists(atPath: root.file("usr/local/lib/systemd/system/" + unit)), "\(unit)")
        }
        let ingestUnit = try String(contentsOfFile: root.file("usr/local/lib/systemd/system/herald-ingest.service"), encoding: .utf8)
        #expect(ingestUnit.contains("ExecStart=/usr/local/bin/herald-ingest --config /etc/herald/herald.json"))
        #expect(ingestUnit.contains("RestartPreventExitStatus=2"))
        #expect(try attributes("usr/local/lib/herald/herald-backup").mode == 0o755)
        #expect(try attributes("var/backups/herald") == (0o750, uid))
        #expect(!FileManager.default.fileExists(atPath: root.file("etc/systemd/system/herald-ingest.service")))
        let version = try runTool(root.file("usr/local/bin/herald-ingest"), ["--version"])
        #expect(version.hasPrefix("herald-ingest "))

        // Installing again keeps an edited configuration.
        try Data("{\"edited\": true}".utf8).write(to: URL(fileURLWithPath: root.file("etc/herald/herald.json")))
        try runTool("/bin/bash", [Repository.root + "/ops/install", "--root", root.path, "--from", HeraldProcesses.binaryDirectory], timeout: 60)
        #expect(try String(contentsOfFile: root.file("etc/herald/herald.json"), encoding: .utf8).contains("edited"))
    }
}
