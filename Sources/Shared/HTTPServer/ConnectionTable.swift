import Core

/// The connections the server holds: the deadline each one works against and who gets a slot under
/// `http.connection_limit`. A value type that answers with what to do; `HTTPServer` keeps it under a
/// lock and does it (shuts a socket down, answers 503).
///
/// Deadlines, as Apache's mod_reqtimeout sets them: the request line and headers within
/// `headerTimeout` of the connection opening (a kept-alive connection: within the longer of that
/// and the idle timeout after its previous answer); the body within `bodyTimeout` of the headers,
/// extended by one second per `bodyMinRate` bytes received, so a body that keeps arriving at that
/// rate is never cut while one trickling a byte every few seconds is.
///
/// At the limit, a new connection takes the slot of the oldest one still waiting for its headers
/// (first those that never completed a request, then idle kept-alive ones); when every slot holds a
/// request in progress, the new connection's request is refused with 503.
struct ConnectionTable {
    struct Limits: Sendable {
        var maxConnections: Int
        var headerTimeout: Double
        var keepAliveTimeout: Double
        var bodyTimeout: Double
        /// Bytes per second that extend the body deadline by one second; 0 extends nothing.
        var bodyMinRate: Double
        /// Connections beyond this many (not counting those leaving) are closed as soon as they are
        /// accepted. It sits above `maxConnections`, so that a connection beyond that is accepted
        /// and can push out a waiting one or be answered 503 instead of waiting in the kernel's queue.
        var hardLimit: Int

        init(_ settings: HTTPSettings) {
            maxConnections = settings.connectionLimit
            headerTimeout = Double(settings.headerTimeoutSeconds)
            keepAliveTimeout = Double(max(settings.headerTimeoutSeconds, settings.idleTimeoutSeconds))
            bodyTimeout = Double(settings.bodyTimeoutSeconds)
            bodyMinRate = Double(settings.bodyMinBytesPerSecond)
            hardLimit = settings.connectionLimit + max(settings.connectionLimit / 4, 16 * settings.threads)
        }
    }

    enum Phase: Equatable {
        /// Waiting for a request line and headers since `since`; `served` once the connection has
        /// answered a request (kept alive).
        case headers(since: Double, served: Bool)
        /// Headers complete at `since`; `bytes` of the body received so far.
        case body(since: Double, bytes: Int)
        /// The request is complete and being handled or answered: no deadline.
        case busy
    }

    /// Which deadline a connection missed.
    enum Cut: String, Sendable, CaseIterable { case headers, body }

    struct Entry {
        let id: UInt
        let fd: Int32
        var phase: Phase
        /// Cut or evicted: its socket is shut down and it no longer holds a slot.
        var leaving = false
        /// Opened while every slot held a request in progress: its request gets 503 unless a slot
        /// frees up before its headers complete.
        var overLimit = false
        var holdsSlot: Bool { !leaving && !overLimit }
    }

    enum Admission: Equatable {
        case admitted
        /// Admitted in the place of this connection, whose socket is to be shut down.
        case evicting(fd: Int32)
        /// No slot: the request on it is to be refused.
        case overLimit
    }

    let limits: Limits
    /// The entries by socket descriptor, which an open connection holds alone: found without
    /// hashing, on every request. An id is its descriptor in the low 32 bits and a serial number
    /// above, so that an id whose socket was closed and reused never finds the new entry.
    private var entries: [Entry?] = []
    private var nextSerial: UInt = 1
    /// Entries present.
    private(set) var count = 0
    /// Entries that hold a slot.
    private(set) var occupied = 0
    /// Entries cut or evicted, whose sockets are shut down but not yet closed.
    private(set) var leavingCount = 0
    /// Connections open and not leaving.
    var present: Int { count - leavingCount }

    init(limits: Limits) { self.limits = limits }

    /// A connection opened on socket `fd`; returns the id to hand back for it.
    mutating func open(fd: Int32, now: Double) -> (id: UInt, admission: Admission) {
        let index = Int(fd)
        if index >= entries.count { entries += repeatElement(nil, count: index + 1 - entries.count) }
        // An entry left on the descriptor by a connection whose close was not reported.
        if let stale = entries[index] { close(stale.id) }
        let id = nextSerial << 32 | UInt(UInt32(bitPattern: fd))
        nextSerial += 1
        var entry = Entry(id: id, fd: fd, phase: .headers(since: now, served: false))
        var admission = Admission.admitted
        if occupied >= limits.maxConnections {
            if let victim = evictionCandidate() {
                entries[Int(victim)]?.leaving = true
                leavingCount += 1
                occupied -= 1
                admission = .evicting(fd: victim)
            } else {
                entry.overLimit = true
                admission = .overLimit
            }
        }
        if entry.holdsSlot { occupied += 1 }
        entries[index] = entry
        count += 1
        return (id, admission)
    }

    /// Where the entry `id` is, when it is present.
    private func index(_ id: UInt) -> Int? {
        let index = Int(id & 0xFFFF_FFFF)
        guard index < entries.count, entries[index]?.id == id else { return nil }
        return index
    }

    /// The socket of the oldest connection waiting for headers, those never served first.
    private func evictionCandidate() -> Int32? {
        var best: (fd: Int32, served: Bool, since: Double)?
        for case let entry? in entries where entry.holdsSlot {
            guard case .headers(let since, let served) = entry.phase else { continue }
            if let current = best, (served ? 1 : 0, since) >= (current.served ? 1 : 0, current.since) { continue }
            best = (entry.fd, served, since)
        }
        return best?.fd
    }

    /// The request's headers are complete. Returns false when the request is to be refused (the
    /// connection has no slot and none has freed up).
    mutating func headersComplete(_ id: UInt, now: Double) -> Bool {
        guard let index = index(id) else { return true }
        if entries[index]!.overLimit, occupied < limits.maxConnections {
            entries[index]!.overLimit = false
            occupied += 1
        }
        entries[index]!.phase = .body(since: now, bytes: 0)
        return !entries[index]!.overLimit
    }

    mutating func received(_ id: UInt, bytes: Int) {
        guard let index = index(id), case .body(let since, let count)? = entries[index]?.phase else { return }
        entries[index]?.phase = .body(since: since, bytes: count + bytes)
    }

    /// The request is complete (or answered before its body was read).
    mutating func busy(_ id: UInt) {
        guard let index = index(id) else { return }
        entries[index]?.phase = .busy
    }

    /// The answer was sent; a kept-alive connection waits for its next request.
    mutating func answered(_ id: UInt, now: Double) {
        guard let index = index(id) else { return }
        entries[index]?.phase = .headers(since: now, served: true)
    }

    /// Bytes of an answer went out: a kept-alive connection's idle time starts again.
    mutating func wrote(_ id: UInt, now: Double) {
        guard let index = index(id), case .headers(_, served: true)? = entries[index]?.phase else { return }
        entries[index]?.phase = .headers(since: now, served: true)
    }

    mutating func close(_ id: UInt) {
        guard let index = index(id), let entry = entries[index] else { return }
        entries[index] = nil
        count -= 1
        if entry.holdsSlot { occupied -= 1 }
        if entry.leaving { leavingCount -= 1 }
    }

    /// The connections past their deadline at `now`, marked as leaving: shut each socket down.
    mutating func overdue(now: Double) -> [(fd: Int32, cut: Cut)] {
        var cuts: [(fd: Int32, cut: Cut)] = []
        for case let entry? in entries where !entry.leaving {
            let cut: Cut
            switch entry.phase {
            case .headers(let since, let served):
                guard now >= since + (served ? limits.keepAliveTimeout : limits.headerTimeout) else { continue }
                cut = .headers
            case .body(let since, let bytes):
                let earned = limits.bodyMinRate > 0 ? Double(bytes) / limits.bodyMinRate : 0
                guard now >= since + limits.bodyTimeout + earned else { continue }
                cut = .body
            case .busy:
                continue
            }
            if entry.holdsSlot { occupied -= 1 }
            entries[Int(entry.fd)]?.leaving = true
            leavingCount += 1
            cuts.append((entry.fd, cut))
        }
        return cuts
    }
}
