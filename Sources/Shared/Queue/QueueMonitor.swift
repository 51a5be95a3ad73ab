internal import CZeroMQ
import Synchronization

/// What happened to a connecting socket's link with its peer, as its monitor reports it.
public enum QueueLinkEvent: Equatable, Sendable {
    /// The ZMTP handshake completed (with CURVE: the keys matched and the peer admitted ours).
    case connected
    /// The peer refused the handshake (a CURVE key it does not list, or a protocol mismatch);
    /// libzmq does not try that connection again.
    case refused
    /// The connection closed, or the handshake failed without a reason (with CURVE, usually a
    /// wrong server key); libzmq connects again by itself.
    case lost
}

/// Reads the events libzmq reports about one socket's connections (`zmq_socket_monitor`): whether a
/// handshake with the peer completed, was refused, or a connection closed. Create it before the
/// socket connects, use it on the socket's thread, and close it after the socket.
public final class QueueMonitor {
    private static let count = Atomic<Int>(0)
    private let reader: QueueSocket

    public init(_ context: QueueContext, watching socket: QueueSocket) throws(QueueError) {
        let address = "inproc://herald-monitor-\(Self.count.add(1, ordering: .relaxed).newValue)"
        let events = ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
            | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_DISCONNECTED
        guard zmq_socket_monitor(socket.handle, address, events) == 0 else {
            throw QueueError(operation: "socket_monitor", errno: zmq_errno())
        }
        reader = try QueueSocket(context, kind: .pair, lingerMilliseconds: 0)
        try reader.connect(address)
    }

    /// The events reported since the last call, oldest first; never waits.
    public func events() throws(QueueError) -> [QueueLinkEvent] {
        var events: [QueueLinkEvent] = []
        while let frames = try reader.receive(timeoutMilliseconds: 0) {
            // The first frame is the event (16 bits) and a value (32 bits); the second the endpoint.
            guard let first = frames.first, first.count >= 2 else { continue }
            switch Int32(first.withUnsafeBytes { $0.loadUnaligned(as: UInt16.self) }) {
            case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: events.append(.connected)
            case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH, ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL: events.append(.refused)
            case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL, ZMQ_EVENT_DISCONNECTED: events.append(.lost)
            default: continue
            }
        }
        return events
    }

    public func close() {
        reader.close()
    }
}
