import Core
import Foundation
@testable import Loadgen
import SDKClient
import Testing

/// `herald-load fleet --huawei F`: a share of the Android installs are Huawei phones, registered with
/// `device_type` 17 and a Push Kit token, and the edge finds them by that token.
struct HuaweiFleetTests {
    func token(_ device: FleetDevice) -> String {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 512, alignment: 8)
        defer { buffer.deallocate() }
        var out = ByteWriter(buffer)
        device.writeToken(&out)
        return String(decoding: out.written, as: UTF8.self)
    }

    @Test func aShareOfTheAndroidDevicesAreHuaweiPhonesAndTheRestIsUnchanged() {
        let devices = (0..<2000).map { FleetDevice(seed: 4, index: $0, oneSignalFraction: 0.1, huaweiFraction: 0.5) }
        let huawei = devices.filter(\.isHuawei)
        let android = devices.filter { !$0.isIOS }
        #expect(huawei.count > android.count / 3 && huawei.count < android.count * 2 / 3, "\(huawei.count) of \(android.count)")
        for device in devices {
            let plain = FleetDevice(seed: 4, index: device.index, oneSignalFraction: 0.1)
            #expect(!plain.isHuawei && plain.isIOS == device.isIOS && plain.hash == device.hash)
            #expect(device.platform == (device.isIOS ? 1 : (device.isHuawei ? 17 : 3)))
            let text = token(device)
            if device.isHuawei {
                #expect(text.hasPrefix("IQAAAACy") && text.count == 130 && !text.contains(":"), "\(text)")
            } else {
                #expect(text == token(plain))
            }
        }
    }

    @Test func aHuaweiDeviceRegistersWithDeviceType17() throws {
        let device = try #require((0..<1000).lazy.map { FleetDevice(seed: 3, index: $0, oneSignalFraction: 0, huaweiFraction: 1) }
            .first { !$0.isIOS })
        let builder = FleetRequestBuilder(target: try TargetURL(parsing: "http://127.0.0.1:8080/json/1.3/"), app: "ABCDE-12345")
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 8)
        defer { buffer.deallocate() }
        let length = try #require(builder.write(.register, device: device, now: 1_772_409_600, playerID: nil, into: buffer))
        let bytes = Array(buffer[0..<length])
        let start = try #require((0..<bytes.count - 3).first { bytes[$0..<$0 + 4].elementsEqual([13, 10, 13, 10]) }) + 4
        let request = try #require(try JSON.parse(Array(bytes[start...]))["request"])
        #expect(request["device_type"] == 17)
        #expect(request["push_token"] == .string(token(device)))
    }

    @Test func theShareIsAFlagOfTheFleetAndOfTheEdge() throws {
        let required = ["--target", "http://127.0.0.1:8080", "--app", "ABCDE-12345", "--devices", "10", "--duration", "5"]
        #expect(try FleetOptions.parse(required, cores: 2)?.huaweiFraction == 0)
        #expect(try FleetOptions.parse(required + ["--huawei", "0.3"], cores: 2)?.huaweiFraction == 0.3)
        #expect(throws: FleetOptions.Problem("--huawei must be a fraction between 0 and 1, got '2'")) {
            try FleetOptions.parse(required + ["--huawei", "2"], cores: 2)
        }
        #expect(try EdgeOptions.parse(["--dir", "e", "--report-to", "http://127.0.0.1:8080", "--app", "ABCDE-12345", "--fleet-devices", "10",
                                       "--fleet-huawei", "0.3"], cores: 2)?.fleetHuawei == 0.3)
        #expect(throws: FleetOptions.Problem("--fleet-huawei must be a fraction between 0 and 1, got 'x'")) {
            try EdgeOptions.parse(["--dir", "e", "--fleet-huawei", "x"], cores: 2)
        }
    }

    @Test func theEdgeFindsAFleetsHuaweiDevicesByTheirTokens() {
        var directory = DeviceDirectory()
        var scenario = Scenario.builtIn
        scenario.huaweiShare = 0.5
        directory.addFleet(devices: 300, seed: 9, scenario: scenario)
        let huawei = (0..<300).map { FleetDevice(seed: 9, index: $0, oneSignalFraction: 0, huaweiFraction: 0.5) }.filter(\.isHuawei)
        #expect(!huawei.isEmpty)
        for device in huawei { #expect(directory.hwid(token: token(device)) != nil) }
    }
}
