import Foundation

/// Which device (hwid) owns a push token: what the edge needs to report for the device, since
/// Herald's payloads carry the message (`p`) but not the device. Built from a `TOKEN HWID` file or
/// from a fleet's seed (the fleet derives every token and hwid from it).
struct DeviceDirectory: Sendable {
    private(set) var hwids: [String: String] = [:]

    var count: Int { hwids.count }

    func hwid(token: String) -> String? { hwids[token] }

    /// Reads `TOKEN HWID` lines (blank lines and `#` comments skipped).
    mutating func load(path: String) throws(FleetOptions.Problem) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw FleetOptions.Problem("--hwids: cannot read \(path)")
        }
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            if fields.isEmpty || fields[0].hasPrefix("#") { continue }
            guard fields.count == 2 else { throw FleetOptions.Problem("--hwids: line \(number + 1) of \(path) is not 'TOKEN HWID'") }
            hwids[String(fields[0])] = String(fields[1])
        }
    }

    /// Adds the app devices of `herald-load fleet --devices N --seed K` with `scenario` (browsers
    /// need no entry: their endpoint names them).
    mutating func addFleet(devices: Int, seed: UInt64, scenario: Scenario) {
        hwids.reserveCapacity(hwids.count + devices)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 512, alignment: 8)
        defer { buffer.deallocate() }
        for index in 0..<devices {
            let device = FleetDevice(seed: seed, index: index, scenario: scenario)
            if device.isWeb { continue }
            var token = ByteWriter(buffer)
            device.writeToken(&token)
            var hwid = ByteWriter(buffer, offset: 256)
            device.writeHWID(&hwid)
            hwids[String(decoding: token.written, as: UTF8.self)] = String(decoding: hwid.written, as: UTF8.self)
        }
    }

    /// Reads the push tokens of `--dead-tokens` (one a line).
    static func tokens(path: String) throws(FleetOptions.Problem) -> Set<String> {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw FleetOptions.Problem("--dead-tokens: cannot read \(path)")
        }
        return Set(text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && !$0.hasPrefix("#") })
    }
}
