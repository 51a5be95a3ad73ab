import SDKClient

/// One keep-alive connection of a worker and the devices it serves: device `number + k·C` for
/// k = 0, 1, … (C connections in all). A device only ever talks over its own connection, one
/// request at a time, as an app does. The connection takes its devices in rounds: each makes one
/// request (the next step of its session script) per round, so all N devices of a run have
/// registered after its first N requests.
///
/// Owned and used by one `FleetWorker` thread only.
final class LoadConnection {
    enum Phase {
        /// No request in flight (the socket, if any, is kept alive).
        case idle
        case connecting
        case handshaking
        case writing
        case reading
    }

    /// The connection's number among all connections of the run (0..<C).
    let number: Int
    /// How many devices it serves.
    let deviceCount: Int
    /// The run-wide index of the run's first device (above 0 in a `--segment` after the first).
    let firstDevice: Int
    /// Per device (index k): `session << 8 | position` in its session script; 0 = not registered.
    var progress: [UInt32]
    /// The OneSignal helper's `player_id` of each registered helper device, by device index k.
    var playerIDs: [UInt32: [UInt8]] = [:]
    /// The helper devices (by index k) whose last editdevice in this run unsubscribed them.
    var unsubscribed: Set<UInt32> = []
    /// The device that sends next, and the step through the connection's devices: coprime with
    /// their count, so each round visits every device once, in a shuffled order.
    private var cursor: Int
    private let stride: Int

    var socket: ClientSocket?
    var phase = Phase.idle
    /// What the socket is registered for in the worker's poll (nil when not registered).
    var interest: EventPoll.Interest?
    let send: UnsafeMutableRawBufferPointer
    var sendLength = 0
    var sendOffset = 0
    var receive: UnsafeMutableRawBufferPointer
    var received = 0
    var parser = HTTPResponseParser()

    // The request in flight.
    var active = false
    var method = FleetMethod.registerDevice
    var step = FleetStep.register
    /// The number of steps of the device's current session.
    var sessionLength = 1
    var device = 0
    /// When the request was due (open loop) or started (closed loop): latency counts from here.
    var intended: Int64 = 0
    /// Past this the request fails as a timeout.
    var deadline: Int64 = 0
    /// The request went out on a connection that had served earlier requests: if the server had
    /// closed it meanwhile, the request is sent once more on a new connection.
    var reused = false
    var resent = false

    /// Open loop: how many requests this connection has started.
    var sequence: Int64 = 0
    /// Closed loop: consecutive failed connection attempts, for the back-off.
    var failures = 0
    /// The connection has nothing more to send in this run.
    var finished = false

    static let sendCapacity = 16 * 1024
    static let initialReceiveCapacity = 16 * 1024
    /// A reply larger than this is refused (bad_http).
    static let maxReceiveCapacity = 16 * 1024 * 1024

    init(number: Int, connections: Int, devices: Int, seed: UInt64, firstDevice: Int = 0) {
        self.number = number
        self.firstDevice = firstDevice
        deviceCount = (devices - number + connections - 1) / connections
        progress = [UInt32](repeating: 0, count: deviceCount)
        let hash = Mix.hash(seed ^ 0xC0DE_CAFE, UInt64(number))
        cursor = Int(hash % UInt64(max(deviceCount, 1)))
        var step = deviceCount > 2 ? 1 + Int((hash >> 32) % UInt64(deviceCount - 1)) : 1
        while Self.gcd(step, deviceCount) != 1 { step += 1 }
        stride = step
        send = .allocate(byteCount: Self.sendCapacity, alignment: 8)
        receive = .allocate(byteCount: Self.initialReceiveCapacity, alignment: 8)
    }

    deinit {
        send.deallocate()
        receive.deallocate()
    }

    /// The fleet-wide index of device k of this connection.
    func deviceIndex(_ k: Int, connections: Int) -> Int { firstDevice + number + k * connections }

    /// The next device of the round: every device of the connection has its turn before any has a second.
    func nextDevice() -> Int {
        let device = cursor
        cursor += stride
        if cursor >= deviceCount { cursor -= deviceCount }
        return device
    }

    static func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }

    /// Doubles the receive buffer (keeping what it holds); false when already at the maximum.
    func growReceive() -> Bool {
        guard receive.count < Self.maxReceiveCapacity else { return false }
        let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: receive.count * 2, alignment: 8)
        bigger.baseAddress!.copyMemory(from: receive.baseAddress!, byteCount: received)
        receive.deallocate()
        receive = bigger
        return true
    }
}
