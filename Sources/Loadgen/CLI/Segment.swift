/// `--segment i/n`: this process is part i of n (from 1) of one fleet, as k6's execution segments
/// are. The fleet's devices 0..<N are cut into n consecutive ranges, part i taking
/// ⌊N·(i−1)/n⌋..<⌊N·i/n⌋, so the parts cover every device exactly once; each part sends its
/// devices' share of the rate (or of every stage's rate), so the parts' rates add up to the fleet's.
/// A device is the same device in whichever part runs it: its identity comes from the seed and its
/// fleet-wide index.
struct Segment: Equatable, CustomStringConvertible {
    /// 1...count.
    let index: Int
    let count: Int
    /// N: the devices of the whole fleet.
    let fleetDevices: Int

    /// Parses `i/n`, for a fleet of `fleetDevices` devices.
    init(parsing text: String, fleetDevices: Int) throws(FleetOptions.Problem) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1, index >= 1, index <= count else {
            throw FleetOptions.Problem("--segment must be i/n with 1 ≤ i ≤ n, such as 1/4, got '\(text)'")
        }
        guard count <= fleetDevices else {
            throw FleetOptions.Problem("--segment \(text): \(count) parts for \(fleetDevices) devices would leave a part without devices")
        }
        self.init(index: index, count: count, fleetDevices: fleetDevices)
    }

    init(index: Int, count: Int, fleetDevices: Int) {
        self.index = index
        self.count = count
        self.fleetDevices = fleetDevices
    }

    /// The fleet-wide index of this part's first device.
    var firstDevice: Int { fleetDevices * (index - 1) / count }
    /// How many devices this part runs.
    var devices: Int { fleetDevices * index / count - firstDevice }
    /// This part's share of the fleet's rate: its share of the devices.
    var share: Double { Double(devices) / Double(fleetDevices) }

    /// `2/4`.
    var description: String { "\(index)/\(count)" }

    /// Narrows fleet-wide `options` (devices, rate, stages) to this part.
    func apply(to options: inout FleetOptions) throws(FleetOptions.Problem) {
        options.devices = devices
        options.rate = options.rate.map { $0 * share }
        if let stages = options.stages {
            let scaled = RateStages(stages: stages.stages.map { RateStages.Stage(seconds: $0.seconds, target: $0.target * share) })
            guard scaled.totalRequests >= 1 else {
                throw FleetOptions.Problem("--segment \(self): this part's share of --stages \(stages) schedules no request")
            }
            options.stages = scaled
        }
    }
}
