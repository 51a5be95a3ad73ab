internal import CNGHTTP2
internal import COpenSSL
import Core
import Foundation
import SDKClient
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One event-loop thread of an `NGHTTP2Transport`: its connections to each origin, the requests
/// waiting for a stream, and the policy that decides when a connection opens.
///
/// - A request waits in its origin's queue until a ready connection has room: the server's
///   announced streams, and the loop's `maxInFlight` over all connections, of which each ready
///   connection first takes its share (what one cannot use, a probe's, goes to the others).
/// - While requests wait, the loop opens connections up to `connections` per origin, when the
///   origin's `ConnectionHealth` allows: after a connection failed, one probe connection per
///   back-off, and the queued requests fail at once (not sent) while no connection is up.
/// - A request refused unprocessed goes back to the front of the queue, twice at most.
///
/// `@unchecked Sendable` invariant: everything but `incoming`, `stopping` and `wake` is used only by
/// the loop's thread; other threads append to `incoming` (behind its mutex) and signal `wake`.
final class ClientLoop: @unchecked Sendable {
    /// An origin's queue, health and connections.
    final class OriginState {
        let origin: Origin
        var pending: [Transfer] = []
        var pendingStart = 0
        var health = ConnectionHealth()
        var connections: [ClientConnection] = []
        /// The TLS session to resume on the next connection (an `SSL_SESSION`, one reference held).
        var session: OpaquePointer?
        /// The origin's last connection negotiated HTTP/1.1 (`HTTP2ClientSettings.offersHTTP1`).
        var speaksHTTP1 = false

        init(_ origin: Origin) { self.origin = origin }

        var hasPending: Bool { pendingStart < pending.count }

        func popFirst() -> Transfer? {
            guard pendingStart < pending.count else { return nil }
            let first = pending[pendingStart]
            pendingStart += 1
            if pendingStart == pending.count {
                pending.removeAll(keepingCapacity: true)
                pendingStart = 0
            } else if pendingStart >= 4096 {
                pending.removeFirst(pendingStart)
                pendingStart = 0
            }
            return first
        }

        func pushFront(_ transfer: Transfer) {
            if pendingStart > 0 {
                pendingStart -= 1
                pending[pendingStart] = transfer
            } else {
                pending.insert(transfer, at: 0)
            }
        }
    }

    /// A request refused unprocessed this many times fails (not sent) instead of queueing again.
    static let maxRefusals = 2
    static let tickSeconds = 0.05
    /// Connections to an origin that speaks HTTP/1.1, whatever `settings.connections` says: each
    /// carries one request at a time, so an origin gets this small fixed pool rather than the
    /// handful of multiplexed connections HTTP/2 needs.
    static let http1ConnectionsPerOrigin = 4

    let settings: HTTP2ClientSettings
    let tls: ClientTLS
    let events: HTTP2Events?
    let callbacks: OpaquePointer
    let readBuffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: 1 << 16)
    /// Transfers handed over by senders, and whether the loop is closing (then nothing more is taken).
    private let incoming = Lock<(transfers: [Transfer], closed: Bool)>(([], false))
    private let stopping = Atomic<Bool>(false)
    private let finishedSignal = DispatchSemaphore(value: 0)
    private let poll = EventPoll(capacity: 128)
    private let wake = Wakeup()
    private var origins: [Origin: OriginState] = [:]
    private var connections: [UInt64: ClientConnection] = [:]
    private var nextTag: UInt64 = 1
    private var inFlight = 0

    init(name: String, settings: HTTP2ClientSettings, tls: ClientTLS, events: HTTP2Events?) {
        self.settings = settings
        self.tls = tls
        self.events = events
        var made: OpaquePointer?
        precondition(nghttp2_session_callbacks_new(&made) == 0, "nghttp2_session_callbacks_new failed")
        callbacks = made!
        nghttp2_session_callbacks_set_on_header_callback(callbacks, clientOnHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, clientOnDataChunk)
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, clientOnFrameReceived)
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks, clientOnFrameSent)
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks, clientOnFrameNotSent)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, clientOnStreamClose)
        poll.add(wake.fd, tag: 0, interest: .readable)
        let thread = Thread(named: name) { [self] in
            run()
            finishedSignal.signal()
        }
        thread.start()
    }

    deinit {
        nghttp2_session_callbacks_del(callbacks)
        readBuffer.deallocate()
    }

    /// Queues `transfers` (from any thread); after `close`, fails them at once (not sent).
    func enqueue(_ transfers: [Transfer]) {
        guard !transfers.isEmpty else { return }
        let taken = incoming.withLock { incoming -> Bool in
            guard !incoming.closed else { return false }
            incoming.transfers.append(contentsOf: transfers)
            return true
        }
        if taken { wake.signal() }
        if !taken {
            for transfer in transfers { transfer.finish(.failure("the client closed")) }
        }
    }

    /// Ends the thread: what was on the network fails as possibly delivered, what waited as not sent.
    func close() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        incoming.withLock { $0.closed = true }
        wake.signal()
        finishedSignal.wait()
    }

    // MARK: - The loop's thread

    private func run() {
        var lastTick = 0.0
        while !stopping.load(ordering: .relaxed) {
            let now = monotonicSeconds()
            // A batch's transfers mostly share one origin (and its strings, `Origin.Splitter`), so
            // the state of the one before is reused without hashing the origin again.
            var last: OriginState?
            for transfer in incoming.withLock({ incoming in defer { incoming.transfers.removeAll(keepingCapacity: true) }; return incoming.transfers }) {
                if last?.origin != transfer.origin { last = origin(transfer.origin) }
                last?.pending.append(transfer)
            }
            if now - lastTick >= Self.tickSeconds {
                lastTick = now
                for connection in Array(connections.values) { connection.tick(now: now) }
                expireQueued(now: now)
            }
            var wait = Self.tickSeconds
            for state in origins.values {
                admit(state, now: now)
                if state.hasPending, case .waiting(let until, _) = state.health.state { wait = min(wait, max(0, until - now)) }
            }
            poll.wait(timeoutNanoseconds: Int64((wait * 1e9).rounded(.up))) { event in
                if event.tag == 0 {
                    wake.reset()
                    return
                }
                guard let connection = connections[event.tag] else { return }
                if event.readable { connection.readable(now: monotonicSeconds()) }
                if event.writable, connection.state != .closed { connection.writable() }
            }
        }
        for connection in Array(connections.values) { connection.close(failure: "the client closed") }
        for state in origins.values {
            while let transfer = state.popFirst() { transfer.finish(.failure("the client closed")) }
            if let session = state.session { SSL_SESSION_free(session) }
        }
        origins.removeAll()
        for transfer in incoming.withLock({ incoming in defer { incoming.transfers.removeAll() }; return incoming.transfers }) {
            transfer.finish(.failure("the client closed"))
        }
    }

    private func origin(_ origin: Origin) -> OriginState {
        if let state = origins[origin] { return state }
        let state = OriginState(origin)
        origins[origin] = state
        return state
    }

    /// Puts waiting requests on streams with room, and opens connections while requests still wait.
    private func admit(_ state: OriginState, now: Double) {
        guard state.hasPending else { return }
        let probing = state.health.state != .healthy
        // The window is shared out evenly over the ready connections, so that a server announcing
        // more streams than the window holds still gets every connection's share (one connection
        // alone takes the whole window); a second pass gives what a connection cannot take (a
        // probe's one stream, fewer announced streams) to the others.
        let ready = state.connections.count { $0.state == .ready }
        let share = (settings.maxInFlight + max(1, ready) - 1) / max(1, ready)
        for sharing in [true, false] where state.hasPending && inFlight < settings.maxInFlight {
            for connection in state.connections where connection.state == .ready {
                var room = min(connection.room(probing: probing), settings.maxInFlight - inFlight)
                if sharing { room = min(room, share - connection.streams.count) }
                guard room > 0 else { continue }
                while room > 0, let transfer = state.popFirst() {
                    transfer.isProbe = connection.isProbe && probing
                    guard connection.submit(transfer, now: now) else {
                        // The session takes no more streams (its stream ids ran out, say): the
                        // request waits for another connection, and this one finishes what it has.
                        state.pushFront(transfer)
                        connection.retire()
                        break
                    }
                    inFlight += 1
                    room -= 1
                }
                connection.flush()
            }
        }
        guard state.hasPending else { return }
        let live = state.connections.count { $0.state != .draining }
        let limit = state.speaksHTTP1 ? Self.http1ConnectionsPerOrigin : settings.connections
        guard live < limit else { return }
        switch state.health.admission(now: now) {
        case .all:
            // An origin whose address is refused has no requests left after the first attempt.
            for _ in live..<limit where state.hasPending {
                open(state, probe: false, now: now)
            }
        case .probe:
            open(state, probe: true, now: now)
        case .none:
            break
        case .failQueued:
            guard live == 0 else { break }
            let reason = "the connection is down (\(state.health.lastError)); waiting before the next attempt"
            while let transfer = state.popFirst() { transfer.finish(.failure(reason)) }
        }
    }

    private func open(_ state: OriginState, probe: Bool, now: Double) {
        let origin = state.origin
        do {
            let address = try ResolvedAddress.resolve(host: origin.host, port: origin.port)
            if settings.refusesPrivateAddresses, let ip = address.ipAddress, ip.isPrivate {
                // Not a connection failure: the origin's health stays as it is, and each request
                // fails at once (a name that resolves elsewhere later is tried then).
                let reason = "\(origin.host) resolves to \(ip), an address of this host or a private network; not connecting"
                while let transfer = state.popFirst() { transfer.finish(.refused(reason)) }
                return
            }
            let connection = try ClientConnection(origin: origin, address: address, tag: nextTag, isProbe: probe, session: state.session,
                                                  loop: self, now: now)
            nextTag += 1
            connections[connection.tag] = connection
            state.connections.append(connection)
            poll.add(connection.fd, tag: connection.tag, interest: [.readable, .writable])
        } catch {
            state.health.broken(probe: probe, error: error.description, now: now, jitter: Double.random(in: 0...1))
        }
    }

    /// Fails queued requests whose timeout passed before any connection could take them.
    private func expireQueued(now: Double) {
        for state in origins.values {
            while state.hasPending, state.pending[state.pendingStart].deadline < now, let transfer = state.popFirst() {
                transfer.finish(.failure("no connection took the request within its timeout"))
            }
        }
    }

    // MARK: - What connections report (loop thread)

    func connectionOpened(_ connection: ClientConnection) {
        origins[connection.origin]?.speaksHTTP1 = connection.speaksHTTP1
        events?.connectionOpened()
    }

    /// Keeps `session` (taking its reference) for the origin's next connection; false when it
    /// cannot be resumed (the reference stays the caller's).
    func keep(_ session: OpaquePointer, for origin: Origin) -> Bool {
        guard SSL_SESSION_is_resumable(session) == 1, let state = origins[origin] else { return false }
        if let old = state.session { SSL_SESSION_free(old) }
        state.session = session
        return true
    }

    func finished(_ transfer: Transfer, _ response: HTTP2Response, answered: Bool, now: Double) {
        inFlight -= 1
        events?.requestFinished(now - transfer.started)
        if answered { origins[transfer.origin]?.health.answered() }
        transfer.finish(response)
    }

    /// A request that left no trace at the server goes back to the front of its queue.
    func requeue(_ transfer: Transfer, refused: Bool) {
        inFlight -= 1
        if refused {
            transfer.refusals += 1
            if transfer.refusals > Self.maxRefusals {
                return transfer.finish(.failure("\(transfer.origin.authority) refused the stream \(transfer.refusals) times"))
            }
        }
        origin(transfer.origin).pushFront(transfer)
    }

    func closed(_ connection: ClientConnection, failure: String?) {
        poll.remove(connection.fd)
        connections[connection.tag] = nil
        guard let state = origins[connection.origin] else { return }
        state.connections.removeAll { $0 === connection }
        guard !stopping.load(ordering: .relaxed) else { return }
        // A probe connection that ends before any answer, failing or not, leaves the origin unproven:
        // without this, the health would wait for the probe's answer for ever.
        let unanswered = connection.isProbe && state.health.state == .probing
        if failure != nil || unanswered {
            state.health.broken(probe: connection.isProbe, error: failure ?? "the probe connection closed before an answer",
                                now: monotonicSeconds(), jitter: Double.random(in: 0...1))
        }
    }

    func watch(_ connection: ClientConnection, writable: Bool) {
        poll.modify(connection.fd, tag: connection.tag, interest: writable ? [.readable, .writable] : .readable)
    }
}
