internal import CZeroMQ
#if canImport(Glibc)
import Glibc
#endif
import Core

/// A failed ZeroMQ call, with `zmq_errno()` captured right after it.
public struct QueueError: Error, Sendable, CustomStringConvertible {
    public let operation: String
    public let errno: Int32
    public var description: String { "ZeroMQ \(operation) failed: \(String(cString: zmq_strerror(errno))) (errno \(errno))" }
}

/// The process's one ZeroMQ context. Thread-safe (libzmq contexts are).
///
/// `@unchecked Sendable` invariant: libzmq documents contexts as thread-safe; the handle is
/// terminated exactly once, by `terminate()`, after every socket is closed.
public final class QueueContext: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    public init() {
        handle = zmq_ctx_new()
    }

    public func terminate() {
        zmq_ctx_term(handle)
    }
}

/// One ZeroMQ socket. Sockets are not thread-safe: create, use and close each on one thread.
public final class QueueSocket {
    public enum Kind {
        case push, pull, router, dealer, reply, pair

        var raw: Int32 {
            switch self {
            case .push: return ZMQ_PUSH
            case .pull: return ZMQ_PULL
            case .router: return ZMQ_ROUTER
            case .dealer: return ZMQ_DEALER
            case .reply: return ZMQ_REP
            case .pair: return ZMQ_PAIR
            }
        }
    }

    private(set) var handle: UnsafeMutableRawPointer?

    /// Creates a socket with a short linger, so that closing never blocks shutdown. A ROUTER reports
    /// a peer it cannot reach (instead of dropping the message), and a peer that connects again
    /// under its routing id (a worker after a partition) takes the id over from its old
    /// connection, which may not be closed yet: otherwise the new connection would be ignored.
    public init(_ context: QueueContext, kind: Kind, lingerMilliseconds: Int32 = 200) throws(QueueError) {
        guard let socket = zmq_socket(context.handle, kind.raw) else {
            throw QueueError(operation: "socket", errno: zmq_errno())
        }
        handle = socket
        try setOption(ZMQ_LINGER, lingerMilliseconds)
        if kind == .router {
            try setOption(ZMQ_ROUTER_MANDATORY, 1)
            try setOption(ZMQ_ROUTER_HANDOVER, 1)
        }
    }

    func setOption(_ option: Int32, _ value: Int32) throws(QueueError) {
        var value = value
        guard zmq_setsockopt(handle, option, &value, MemoryLayout<Int32>.size) == 0 else {
            throw QueueError(operation: "setsockopt(\(option))", errno: zmq_errno())
        }
    }

    func setText(_ option: Int32, _ text: String, name: String) throws(QueueError) {
        let bytes = Array(text.utf8)
        guard zmq_setsockopt(handle, option, bytes, bytes.count) == 0 else {
            throw QueueError(operation: "setsockopt(\(name))", errno: zmq_errno())
        }
    }

    /// Sets the socket's identity (DEALER), so that ingest can address this worker.
    public func setIdentity(_ identity: String) throws(QueueError) {
        let bytes = Array(identity.utf8)
        guard zmq_setsockopt(handle, ZMQ_ROUTING_ID, bytes, bytes.count) == 0 else {
            throw QueueError(operation: "setsockopt(ROUTING_ID)", errno: zmq_errno())
        }
    }

    /// Drops (disconnects) a peer that sends a message larger than `bytes`.
    public func setMaxMessageSize(_ bytes: Int) throws(QueueError) {
        var value = Int64(bytes)
        guard zmq_setsockopt(handle, ZMQ_MAXMSGSIZE, &value, MemoryLayout<Int64>.size) == 0 else {
            throw QueueError(operation: "setsockopt(MAXMSGSIZE)", errno: zmq_errno())
        }
    }

    /// Turns on ZMTP heartbeats: a PING every `intervalMilliseconds`; a connection over which
    /// nothing arrives for `timeoutMilliseconds` is closed (and the peer is asked, with the PING's
    /// time to live, to close it after as long without hearing from this side). A connecting socket
    /// then connects again by itself, each attempt given up after `timeoutMilliseconds` too, so a
    /// link that comes back is used again within seconds.
    public func setHeartbeat(intervalMilliseconds: Int32, timeoutMilliseconds: Int32) throws(QueueError) {
        try setOption(ZMQ_HEARTBEAT_IVL, intervalMilliseconds)
        try setOption(ZMQ_HEARTBEAT_TIMEOUT, timeoutMilliseconds)
        try setOption(ZMQ_HEARTBEAT_TTL, timeoutMilliseconds)
        try setOption(ZMQ_CONNECT_TIMEOUT, timeoutMilliseconds)
    }

    /// Bounds queued outgoing messages (both directions use the same figure).
    public func setHighWaterMark(_ messages: Int32) throws(QueueError) {
        try setOption(ZMQ_SNDHWM, messages)
        try setOption(ZMQ_RCVHWM, messages)
    }

    public func bind(_ endpoint: String) throws(QueueError) {
        guard zmq_bind(handle, endpoint) == 0 else { throw QueueError(operation: "bind \(endpoint)", errno: zmq_errno()) }
    }

    public func connect(_ endpoint: String) throws(QueueError) {
        guard zmq_connect(handle, endpoint) == 0 else { throw QueueError(operation: "connect \(endpoint)", errno: zmq_errno()) }
    }

    /// Sends a multi-part message. With `wait == false` a full queue throws EAGAIN instead of blocking.
    public func send(_ frames: [[UInt8]], wait: Bool = true) throws(QueueError) {
        for (index, frame) in frames.enumerated() {
            var flags: Int32 = index < frames.count - 1 ? ZMQ_SNDMORE : 0
            if !wait { flags |= ZMQ_DONTWAIT }
            let result = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags) }
            guard result >= 0 else { throw QueueError(operation: "send", errno: zmq_errno()) }
        }
    }

    /// One received multi-part message and the address of the connection it came over.
    public struct Message: Sendable {
        public let frames: [[UInt8]]
        /// ZeroMQ's `Peer-Address` of the sender: its IP address over TCP (`127.0.0.1`, `10.0.0.7`),
        /// `localhost:<uid>:<gid>:<pid>` over IPC (the peer process's credentials); nil in-process.
        public let peerAddress: String?
    }

    /// Receives one multi-part message, or nil when none arrives within `timeoutMilliseconds`.
    public func receive(timeoutMilliseconds: Int) throws(QueueError) -> [[UInt8]]? {
        try receiveMessage(timeoutMilliseconds: timeoutMilliseconds)?.frames
    }

    /// Receives one multi-part message with its sender's address, or nil when none arrives within
    /// `timeoutMilliseconds`.
    public func receiveMessage(timeoutMilliseconds: Int) throws(QueueError) -> Message? {
        var item = zmq_pollitem_t(socket: handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0)
        let ready = zmq_poll(&item, 1, timeoutMilliseconds)
        if ready < 0 {
            let code = zmq_errno()
            if code == EINTR { return nil }
            throw QueueError(operation: "poll", errno: code)
        }
        guard ready > 0 else { return nil }
        var frames: [[UInt8]] = []
        var peerAddress: String?
        while true {
            var message = zmq_msg_t()
            zmq_msg_init(&message)
            defer { zmq_msg_close(&message) }
            guard zmq_msg_recv(&message, handle, 0) >= 0 else { throw QueueError(operation: "receive", errno: zmq_errno()) }
            // Every frame of a message came over the same connection: the first one tells.
            if frames.isEmpty, let address = zmq_msg_gets(&message, "Peer-Address") { peerAddress = String(cString: address) }
            let size = zmq_msg_size(&message)
            if let data = zmq_msg_data(&message), size > 0 {
                frames.append(Array(UnsafeRawBufferPointer(start: data, count: size)))
            } else {
                frames.append([])
            }
            guard zmq_msg_more(&message) != 0 else { break }
        }
        return Message(frames: frames, peerAddress: peerAddress)
    }

    /// Waits up to `timeoutMilliseconds` until one of `sockets` has a message to receive, or
    /// `wakeup` is signalled; returns the index of the first socket that has one, or nil.
    public static func firstReadable(_ sockets: [QueueSocket], timeoutMilliseconds: Int,
                                     wakeup: Wakeup? = nil) throws(QueueError) -> Int? {
        var items = sockets.map { zmq_pollitem_t(socket: $0.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0) }
        if let wakeup { items.append(zmq_pollitem_t(socket: nil, fd: wakeup.fd, events: Int16(ZMQ_POLLIN), revents: 0)) }
        let ready = zmq_poll(&items, Int32(items.count), timeoutMilliseconds)
        if ready < 0 {
            let code = zmq_errno()
            if code == EINTR { return nil }
            throw QueueError(operation: "poll", errno: code)
        }
        if let wakeup, items[sockets.count].revents != 0 { wakeup.reset() }
        return items.prefix(sockets.count).firstIndex { $0.revents & Int16(ZMQ_POLLIN) != 0 }
    }

    public func close() {
        if let handle { zmq_close(handle) }
        handle = nil
    }
}
