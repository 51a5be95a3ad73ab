import Synchronization

/// What clients did to an `HTTP2Server`, counted since its start: what a test reads to check a
/// client's manners (no resets of finished streams, PINGs when idle, no more streams than announced,
/// TLS sessions resumed). Written by the loop threads, read from any thread.
public final class HTTP2ServerCounters: Sendable {
    private let requests = Atomic<Int>(0)
    private let resets = Atomic<Int>(0)
    private let pings = Atomic<Int>(0)
    private let refusals = Atomic<Int>(0)
    private let resumptions = Atomic<Int>(0)
    private let open = Atomic<Int>(0)
    private let mostOpen = Atomic<Int>(0)
    private let mostOpenOnOne = Atomic<Int>(0)

    init() {}

    /// Requests received whole (up to END_STREAM), whatever the server then did with them.
    public var requestsReceived: Int { requests.load(ordering: .relaxed) }
    /// RST_STREAM frames clients sent, those that reset a finished stream included (the server drops
    /// them before its session counts them, but counts them here).
    public var resetsReceived: Int { resets.load(ordering: .relaxed) }
    /// PING frames clients sent (acknowledgements of the server's own PINGs not included).
    public var pingsReceived: Int { pings.load(ordering: .relaxed) }
    /// Streams the server reset with REFUSED_STREAM: those the handler refused, and those a client
    /// opened beyond the announced SETTINGS_MAX_CONCURRENT_STREAMS.
    public var streamsRefused: Int { refusals.load(ordering: .relaxed) }
    /// TLS handshakes that resumed an earlier session.
    public var sessionsResumed: Int { resumptions.load(ordering: .relaxed) }
    /// The most request streams open at once, over all connections.
    public var mostStreamsOpen: Int { mostOpen.load(ordering: .relaxed) }
    /// The most request streams open at once on one connection.
    public var mostStreamsOpenOnAConnection: Int { mostOpenOnOne.load(ordering: .relaxed) }

    func requestReceived() { requests.add(1, ordering: .relaxed) }
    func resetsReceived(_ count: Int) { resets.add(count, ordering: .relaxed) }
    func pingReceived() { pings.add(1, ordering: .relaxed) }
    func streamRefused() { refusals.add(1, ordering: .relaxed) }
    func sessionResumed() { resumptions.add(1, ordering: .relaxed) }

    /// A stream opened on a connection that now has `openOnConnection` open.
    func streamOpened(openOnConnection: Int) {
        let now = open.add(1, ordering: .relaxed).newValue
        mostOpen.max(now, ordering: .relaxed)
        mostOpenOnOne.max(openOnConnection, ordering: .relaxed)
    }

    func streamClosed() { open.subtract(1, ordering: .relaxed) }
}
