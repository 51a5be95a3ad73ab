import Core
import Foundation
import SDKClient

/// One event-loop thread of a fleet: it owns a share of the connections (and so of the devices),
/// drives them with epoll, and counts what happens into `shared`, which the main thread reads
/// every second.
///
/// `@unchecked Sendable`: everything but `shared` is touched only by the thread running `run()`
/// (the main thread hands the worker over before starting it and reads only `shared`, under its lock).
final class FleetWorker: @unchecked Sendable {
    struct Shared {
        var totals = FleetStats()
        var interval = IntervalStats()
        var finished = false
    }

    let shared = Lock(Shared())
    private let plan: FleetPlan
    private let control: RunControl
    private let connections: [LoadConnection]
    private let poll = EventPoll(capacity: 512)
    private let builder: FleetRequestBuilder
    private var waiting = DueHeap()
    private let timeoutNanos: Int64
    private var active = 0
    private var wallSeconds: Int64 = 0
    /// The error kinds whose first reply's message this worker has kept.
    private var described: Set<ErrorKind> = []

    /// Connection-attempt back-off of the closed loop: 10 ms doubling to 1 s.
    static let backoffBase: Int64 = 10_000_000
    static let backoffMax: Int64 = 1_000_000_000
    /// How often timeouts are checked.
    static let housekeepingNanos: Int64 = 20_000_000

    /// - Parameter numbers: the run-wide numbers of the connections this worker owns.
    init(plan: FleetPlan, control: RunControl, numbers: [Int]) {
        self.plan = plan
        self.control = control
        let options = plan.options
        connections = numbers.map {
            LoadConnection(number: $0, connections: options.connections, devices: options.devices, seed: options.seed,
                           firstDevice: options.segment?.firstDevice ?? 0)
        }
        builder = FleetRequestBuilder(target: options.target, app: options.app, webPush: options.webPush ?? "")
        timeoutNanos = Int64(options.timeoutSeconds * 1e9)
    }

    deinit { builder.release() }

    private var isOpenLoop: Bool { plan.schedule != nil }

    // MARK: - Loop

    func run() {
        wallSeconds = Int64(Date().timeIntervalSince1970)
        for local in connections.indices { scheduleNext(local, now: control.start) }
        var nextHousekeeping = control.start + Self.housekeepingNanos
        while true {
            var now = MonotonicClock.now()
            let end = control.end
            if control.aborted { break }
            // Start what is due. Past the end, only what fell due before it: connections that were
            // idle and waiting when the end came (the loop woke late), not backlogs.
            while let (due, local) = waiting.popDue(now) {
                if due >= end { continue }
                begin(local, intended: due, now: now)
            }
            if now >= end {
                waiting.removeAll()
                if active == 0 { break }
            }
            var wake = nextHousekeeping
            if let earliest = waiting.earliest { wake = min(wake, earliest) }
            if now < end { wake = min(wake, end) }
            poll.wait(timeoutNanoseconds: max(0, wake - now)) { event in
                self.handle(Int(event.tag), readable: event.readable, writable: event.writable)
            }
            now = MonotonicClock.now()
            if now >= nextHousekeeping {
                housekeeping(now)
                nextHousekeeping = now + Self.housekeepingNanos
            }
        }
        finish()
    }

    /// Timeouts, and the wall clock the events carry.
    private func housekeeping(_ now: Int64) {
        wallSeconds = Int64(Date().timeIntervalSince1970)
        for local in connections.indices {
            let connection = connections[local]
            if connection.active && now > connection.deadline {
                fail(local, .timeout, now: now)
            }
        }
    }

    /// Counts what was never started and closes every connection.
    private func finish() {
        var dropped = 0
        if let schedule = plan.schedule {
            let endOffset = control.end - control.start
            for connection in connections {
                let due = schedule.count(connection: connection.number, before: endOffset)
                dropped += Int(max(0, due - connection.sequence))
            }
        }
        for local in connections.indices {
            if connections[local].active {
                // Aborted with a reply outstanding: it counts as never answered.
                record(local, .timeout, latency: nil)
            }
            closeSocket(local)
        }
        let unsubscribed = connections.reduce(0) { $0 + $1.unsubscribed.count }
        shared.withLock {
            $0.totals.dropped += dropped
            $0.totals.unsubscribed += unsubscribed
            $0.finished = true
        }
    }

    // MARK: - Requests

    /// Queues the connection's next request: open loop at its scheduled time, closed loop at once
    /// (or after the back-off when connecting failed).
    private func scheduleNext(_ local: Int, now: Int64) {
        let connection = connections[local]
        if let schedule = plan.schedule {
            let offset = schedule.due(connection: connection.number, sequence: connection.sequence)
            let due = offset == .max ? Int64.max : control.start + offset
            // After the end (or the last stage) no request starts: what a busy connection still owed is dropped.
            if due >= control.end || now >= control.end {
                connection.finished = true
                return
            }
            waiting.push(due, local)
        } else if connection.failures > 0 {
            let backoff = min(Self.backoffMax, Self.backoffBase << Int64(min(connection.failures - 1, 10)))
            waiting.push(now + backoff, local)
        } else if now < control.end {
            begin(local, intended: now, now: now)
        }
    }

    /// Builds the next request of a random device of the connection and sends it.
    private func begin(_ local: Int, intended: Int64, now: Int64) {
        let connection = connections[local]
        if isOpenLoop { connection.sequence += 1 }
        let k = connection.nextDevice()
        let device = FleetDevice(seed: plan.options.seed, index: connection.deviceIndex(k, connections: plan.options.connections),
                                 scenario: plan.options.scenario)
        let state = connection.progress[k]
        let session = state == 0 ? 1 : Int(state >> 8)
        let position = Int(state & 0xFF)
        let (step, sessionLength) = SessionScript.step(of: device, session: session, position: position, scenario: plan.options.scenario)
        let playerID = device.usesOneSignal ? connection.playerIDs[UInt32(k)] : nil
        guard let length = builder.write(step, device: device, now: wallSeconds, playerID: playerID, into: connection.send) else {
            preconditionFailure("a \(step) request did not fit in \(LoadConnection.sendCapacity) bytes")
        }
        connection.active = true
        active += 1
        connection.device = k
        connection.step = step
        connection.sessionLength = sessionLength
        connection.method = step.method(oneSignal: device.usesOneSignal)
        connection.intended = intended
        connection.deadline = now + timeoutNanos
        connection.sendLength = length
        connection.sendOffset = 0
        connection.resent = false
        if connection.socket == nil {
            connect(local, now: now)
        } else {
            connection.reused = true
            connection.phase = .writing
            write(local, now: now)
        }
    }

    private func connect(_ local: Int, now: Int64) {
        let connection = connections[local]
        connection.reused = false
        let address = plan.addresses[connection.number % plan.addresses.count]
        do {
            let socket = try ClientSocket.connect(to: address)
            connection.socket = socket
            connection.phase = .connecting
            watch(local, .writable)
        } catch {
            connectionFailed(local, ErrorKind(error), detail: error.detail, now: now)
        }
    }

    private func handle(_ local: Int, readable: Bool, writable: Bool) {
        let connection = connections[local]
        let now = MonotonicClock.now()
        switch connection.phase {
        case .idle:
            if readable { idleReadable(local) }
        case .connecting:
            guard writable, let socket = connection.socket else { return }
            if let failure = socket.finishConnect() {
                connectionFailed(local, ErrorKind(failure), detail: failure.detail, now: now)
                return
            }
            if let tls = plan.tls {
                do {
                    try socket.startTLS(tls, host: plan.options.target.host, hostIsIPLiteral: plan.options.target.hostIsIPLiteral)
                } catch {
                    connectionFailed(local, .tls, detail: error.detail, now: now)
                    return
                }
                connection.phase = .handshaking
                handshake(local, now: now)
            } else {
                connection.phase = .writing
                write(local, now: now)
            }
        case .handshaking:
            handshake(local, now: now)
        case .writing:
            write(local, now: now)
        case .reading:
            read(local, now: now)
        }
    }

    /// A kept-alive connection with nothing in flight became readable: the server closed it, sent
    /// something unasked (then the connection is dropped too), or, over TLS 1.3, sent a session
    /// ticket, which reading consumes.
    private func idleReadable(_ local: Int) {
        let connection = connections[local]
        guard let socket = connection.socket else { return }
        switch socket.read(into: connection.receive) {
        case .wouldBlock(let wantsWrite):
            watch(local, wantsWrite ? .writable : .readable)
        case .bytes, .closed, .failed:
            closeSocket(local)
        }
    }

    private func handshake(_ local: Int, now: Int64) {
        let connection = connections[local]
        guard let socket = connection.socket else { return }
        switch socket.handshake() {
        case .done:
            connection.failures = 0
            connection.phase = .writing
            write(local, now: now)
        case .wouldBlock(let wantsWrite):
            watch(local, wantsWrite ? .writable : .readable)
        case .failed(let failure):
            connectionFailed(local, ErrorKind(failure), detail: failure.detail, now: now)
        }
    }

    private func write(_ local: Int, now: Int64) {
        let connection = connections[local]
        guard let socket = connection.socket else { return }
        if plan.tls == nil { connection.failures = 0 }
        while connection.sendOffset < connection.sendLength {
            let remaining = UnsafeRawBufferPointer(rebasing: connection.send[connection.sendOffset..<connection.sendLength])
            switch socket.write(remaining) {
            case .bytes(let count):
                connection.sendOffset += count
            case .wouldBlock(let wantsWrite):
                watch(local, wantsWrite ? .writable : .readable)
                return
            case .closed:
                transportFailed(local, .connectionClosed, now: now)
                return
            case .failed(let failure):
                transportFailed(local, ErrorKind(failure), detail: failure.detail, now: now)
                return
            }
        }
        connection.phase = .reading
        connection.received = 0
        connection.parser.reset()
        watch(local, .readable)
    }

    private func read(_ local: Int, now: Int64) {
        let connection = connections[local]
        while let socket = connection.socket {
            if connection.received == connection.receive.count && !connection.growReceive() {
                transportFailed(local, .badHTTP, now: now)
                return
            }
            let space = UnsafeMutableRawBufferPointer(rebasing: connection.receive[connection.received...])
            switch socket.read(into: space) {
            case .bytes(let count):
                connection.received += count
                switch connection.parser.parse(connection.receive, count: connection.received) {
                case .needMore:
                    if socket.hasBufferedBytes || connection.received == connection.receive.count { continue }
                    return
                case .complete(let status, let body, _, let keepAlive):
                    replied(local, status: status, body: body, keepAlive: keepAlive, now: now)
                    return
                case .malformed:
                    transportFailed(local, .badHTTP, now: now)
                    return
                }
            case .wouldBlock(let wantsWrite):
                watch(local, wantsWrite ? .writable : .readable)
                return
            case .closed:
                switch connection.parser.parse(connection.receive, count: connection.received, atEOF: true) {
                case .complete(let status, let body, _, _):
                    replied(local, status: status, body: body, keepAlive: false, now: now)
                default:
                    transportFailed(local, connection.received == 0 ? .connectionClosed : .badHTTP, now: now)
                }
                return
            case .failed(let failure):
                transportFailed(local, ErrorKind(failure), detail: failure.detail, now: now)
                return
            }
        }
    }

    /// A complete HTTP reply: judge it, count it, move the device on, and go on.
    private func replied(_ local: Int, status: Int, body: Range<Int>, keepAlive: Bool, now: Int64) {
        let connection = connections[local]
        let method = connection.method
        var outcome: ErrorKind?
        var playerID: Range<Int>?
        if status != 200 {
            outcome = .http(status)
        } else if let envelope = EnvelopeScanner.scan(UnsafeRawBufferPointer(connection.receive), body) {
            if method.isOneSignal {
                if envelope.status != 1 {
                    outcome = .oneSignalStatus(envelope.status ?? 0)
                } else if method == .oneSignalAddDevice {
                    if let id = envelope.playerID, !id.isEmpty { playerID = id } else { outcome = .missingPlayerID }
                }
            } else if let code = envelope.statusCode {
                if code != 200 { outcome = .statusCode(code) }
            } else {
                outcome = .missingStatusCode
            }
        } else {
            outcome = .nonJSON
        }
        if let playerID {
            connection.playerIDs[UInt32(connection.device)] = Array(UnsafeRawBufferPointer(rebasing: connection.receive[playerID]))
        }
        var detail: String?
        if let outcome, !described.contains(outcome) {
            described.insert(outcome)
            detail = Self.serverMessage(Array(UnsafeRawBufferPointer(rebasing: connection.receive[body])))
        }
        record(local, outcome, latency: now - connection.intended, detail: detail, bytes: (connection.sendLength, connection.received))
        if !keepAlive { closeSocket(local) }
        complete(local, succeeded: outcome == nil, now: now)
    }

    /// The connection could not be set up (refused, TLS): the request fails; closed loop backs off.
    private func connectionFailed(_ local: Int, _ kind: ErrorKind, detail: String, now: Int64) {
        connections[local].failures += 1
        closeSocket(local)
        record(local, kind, latency: nil, detail: detail)
        complete(local, succeeded: false, now: now)
    }

    /// The connection broke while the request was on it. If it had served earlier requests and
    /// broke before any byte of the reply, the server had closed it while idle: send once more.
    private func transportFailed(_ local: Int, _ kind: ErrorKind, detail: String? = nil, now: Int64) {
        let connection = connections[local]
        let nothingCameBack = connection.received == 0
        closeSocket(local)
        if connection.reused && !connection.resent && nothingCameBack
            && (kind == .connectionClosed || kind == .connectionFailed)
        {
            connection.resent = true
            connection.sendOffset = 0
            connect(local, now: now)
            return
        }
        record(local, kind, latency: nil, detail: detail)
        complete(local, succeeded: false, now: now)
    }

    private func fail(_ local: Int, _ kind: ErrorKind, now: Int64) {
        closeSocket(local)
        record(local, kind, latency: nil)
        complete(local, succeeded: false, now: now)
    }

    /// The request is over: move the device along its script and queue the connection's next request.
    private func complete(_ local: Int, succeeded: Bool, now: Int64) {
        let connection = connections[local]
        guard connection.active else { return }
        connection.active = false
        active -= 1
        connection.phase = .idle
        // A registration that failed is tried again on the device's next turn; any other step moves on.
        if succeeded || connection.step != .register {
            let k = connection.device
            let state = connection.progress[k]
            let session = state == 0 ? 1 : Int(state >> 8)
            let position = Int(state & 0xFF) + 1
            if position >= connection.sessionLength {
                connection.progress[k] = UInt32(min(session + 1, 0xFF_FFFF)) << 8
            } else {
                connection.progress[k] = UInt32(session) << 8 | UInt32(position)
            }
        }
        if connection.received > 0 { connection.received = 0 }
        connection.parser.reset()
        scheduleNext(local, now: now)
    }

    /// What a refusal's body says: the Pushwoosh envelope's `status_message`, the helper's
    /// `message`, an `error`, or else the start of the body as text (nil when empty).
    static func serverMessage(_ body: [UInt8]) -> String? {
        if let json = try? JSON.parse(body) {
            for key in ["status_message", "message", "error"] {
                if let text = json[key]?.stringValue, !text.isEmpty { return "Herald: " + text }
            }
        }
        let text = String(decoding: body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : "Herald: " + text
    }

    /// Counts the request's outcome; `detail` (the socket or TLS error's text) is kept for the first
    /// failure of each kind, to show what it was.
    private func record(_ local: Int, _ error: ErrorKind?, latency: Int64?, detail: String? = nil, bytes: (sent: Int, received: Int)? = nil) {
        let connection = connections[local]
        let method = connection.method.rawValue
        let micros = latency.map { $0 / 1_000 }
        let eventIndex = error == nil ? FleetStats.eventIndex(connection.step) : nil
        let registered = error == nil && connection.step == .register
        // An iOS SDK device registered without notification permission is opted out: campaigns
        // that show something do not reach it.
        let optedOut = registered && FleetDevice(seed: plan.options.seed, index: connection.deviceIndex(connection.device, connections: plan.options.connections),
                                                 scenario: plan.options.scenario).optedOut
        // Every editdevice carries notification_types: only the unsubscribe step leaves the device out.
        if error == nil, connection.method == .oneSignalEditDevice {
            if connection.step == .subscription(subscribed: false) {
                connection.unsubscribed.insert(UInt32(connection.device))
            } else {
                connection.unsubscribed.remove(UInt32(connection.device))
            }
        }
        shared.withLock { shared in
            if let error {
                if let detail, shared.totals.details[error] == nil { shared.totals.details[error] = detail }
                shared.totals.methods[method].errors[error, default: 0] += 1
                shared.interval.errors[error, default: 0] += 1
                shared.interval.methods[method].errors[error, default: 0] += 1
            } else {
                shared.totals.methods[method].ok += 1
                shared.interval.ok += 1
                shared.interval.methods[method].ok += 1
                if let eventIndex { shared.totals.events[eventIndex] += 1 }
                if registered { shared.totals.registered += 1 }
                if optedOut { shared.totals.optedOut += 1 }
            }
            if let bytes {
                shared.totals.bytesSent += bytes.sent
                shared.totals.bytesReceived += bytes.received
            }
            if let micros {
                shared.totals.methods[method].latency.record(micros)
                shared.interval.latency.record(micros)
                shared.interval.methods[method].latency.record(micros)
            }
        }
    }

    // MARK: - Sockets

    private func watch(_ local: Int, _ interest: EventPoll.Interest) {
        let connection = connections[local]
        guard let socket = connection.socket, connection.interest != interest else { return }
        if connection.interest == nil {
            poll.add(socket.fd, tag: UInt64(local), interest: interest)
        } else {
            poll.modify(socket.fd, tag: UInt64(local), interest: interest)
        }
        connection.interest = interest
    }

    private func closeSocket(_ local: Int) {
        let connection = connections[local]
        guard let socket = connection.socket else { return }
        if connection.interest != nil { poll.remove(socket.fd) }
        socket.close()
        connection.socket = nil
        connection.interest = nil
        connection.received = 0
    }
}
