import Foundation
@testable import Loadgen
import Testing
import TestSupport

/// How the edge knows the hwid behind a push token: from a fleet's seed or a `TOKEN HWID` file.
struct DeviceDirectoryTests {
    @Test func aFleetsDevicesAreFoundByTheirTokens() {
        var directory = DeviceDirectory()
        var scenario = Scenario.builtIn
        scenario.oneSignalShare = 0.2
        directory.addFleet(devices: 500, seed: 9, scenario: scenario)
        #expect(directory.count == 500)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 512, alignment: 8)
        defer { buffer.deallocate() }
        for index in [0, 1, 250, 499] {
            let device = FleetDevice(seed: 9, index: index, oneSignalFraction: 0.2)
            var token = ByteWriter(buffer)
            device.writeToken(&token)
            var hwid = ByteWriter(buffer, offset: 256)
            device.writeHWID(&hwid)
            let text = String(decoding: token.written, as: UTF8.self)
            #expect(directory.hwid(token: text) == String(decoding: hwid.written, as: UTF8.self))
            // What the edge accepts as a token of that platform.
            #expect(device.isIOS ? APNsEndpoint.isDeviceToken(text) : FCMEndpoint.isRegistrationToken(text), "\(text)")
        }
        #expect(directory.hwid(token: "unknown") == nil)
    }

    @Test func aHwidsFileIsReadAndABadLineNamed() throws {
        let folder = try TemporaryDirectory()
        let good = folder.file("hwids.txt")
        try "# token hwid\nabc HWID-1\n\n  def\tHWID-2\n".write(toFile: good, atomically: true, encoding: .utf8)
        var directory = DeviceDirectory()
        try directory.load(path: good)
        #expect(directory.count == 2 && directory.hwid(token: "abc") == "HWID-1" && directory.hwid(token: "def") == "HWID-2")
        let bad = folder.file("bad.txt")
        try "abc HWID-1\nonly-a-token\n".write(toFile: bad, atomically: true, encoding: .utf8)
        #expect(throws: FleetOptions.Problem("--hwids: line 2 of \(bad) is not 'TOKEN HWID'")) { try directory.load(path: bad) }
        #expect(throws: FleetOptions.Problem("--hwids: cannot read \(folder.file("missing"))")) { try directory.load(path: folder.file("missing")) }
    }
}
