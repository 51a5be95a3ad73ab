/// Whether a connecting socket's link with its peer is up, judged from its monitor's events rather
/// than from sends (a PUSH socket queues messages whether or not anyone receives them). A value
/// that says what to do, so it is tested without sockets or clocks.
public struct LinkWatch: Sendable, Equatable {
    public enum Action: Equatable, Sendable {
        /// The handshake completed: at start, or again after the link was down.
        case connected
        /// The link that was up went down: the peer closed the connection, refused a handshake, or
        /// stopped answering ZeroMQ heartbeats (a partition).
        case disconnected
        /// No handshake for `downSeconds`; `refused` when the peer refused the last one.
        case unreachable(downSeconds: Double, refused: Bool)
        /// Close the socket and open it anew: the peer refused its handshake, and libzmq does not try
        /// a refused connection again. Only then: while the peer is merely away, libzmq connects
        /// again by itself and keeps what was sent meanwhile, which closing the socket would drop.
        case reconnect
    }

    /// Seconds without a handshake before the first warning, and between attempts to connect anew.
    public let patience: Double
    /// Seconds between warnings while the link stays down.
    public let warningInterval: Double
    public private(set) var isUp = false
    /// Whether the peer refused a handshake since the socket was opened.
    private var refused = false
    /// When the link went down, or the watch started.
    private var downSince: Double
    private var lastAttempt: Double
    private var lastWarning: Double?

    public init(now: Double, patience: Double = 5, warningInterval: Double = 60) {
        self.patience = patience
        self.warningInterval = warningInterval
        downSince = now
        lastAttempt = now
    }

    /// Takes in one monitor event.
    public mutating func observe(_ event: QueueLinkEvent, now: Double) -> Action? {
        switch event {
        case .connected:
            refused = false
            guard !isUp else { return nil }
            isUp = true
            lastWarning = nil
            return .connected
        case .refused, .lost:
            if event == .refused { refused = true }
            guard isUp else { return nil }
            isUp = false
            downSince = now
            lastAttempt = now
            return .disconnected
        }
    }

    /// What is due at `now`: while the link is down, a warning after `patience` seconds (then one
    /// per `warningInterval`), and, if the peer refused the handshake, a new connection every
    /// `patience` seconds.
    public mutating func check(now: Double) -> [Action] {
        guard !isUp, now - lastAttempt >= patience else { return [] }
        lastAttempt = now
        var actions: [Action] = []
        if lastWarning.map({ now - $0 >= warningInterval }) ?? true {
            lastWarning = now
            actions.append(.unreachable(downSeconds: now - downSince, refused: refused))
        }
        if refused {
            // The new socket has not been refused yet.
            refused = false
            actions.append(.reconnect)
        }
        return actions
    }
}
