import Foundation
import Core
import Queue

/// One of the worker's sockets to one ingest endpoint, with the monitor that tells whether its
/// handshake completed. It logs when the link comes up, warns when it goes down (ZeroMQ
/// heartbeats close a link whose ingest stopped answering within seconds) and, when no handshake
/// has completed for 5 s, warns naming the endpoint. The socket is opened anew only when ingest refused its handshake
/// (libzmq never tries a refused connection again); while ingest is merely away, libzmq connects
/// again by itself, and what was sent to it meanwhile (up to the high-water mark) goes out once the
/// handshake completes: closing the socket would drop it. Used only by the queue thread.
final class IngestLink {
    /// `queue.jobs` or `queue.results`, for the logs.
    let key: String
    let endpoint: String
    private let context: QueueContext
    /// Makes the socket, with its options set, not yet connected.
    private let make: () throws -> QueueSocket
    private(set) var socket: QueueSocket
    private var monitor: QueueMonitor
    private var watch = LinkWatch(now: monotonicSeconds(), patience: Pipeline.workerSilenceSeconds)

    init(context: QueueContext, key: String, endpoint: String, make: @escaping () throws -> QueueSocket) throws {
        self.context = context
        self.key = key
        self.endpoint = endpoint
        self.make = make
        (socket, monitor) = try Self.connect(context: context, endpoint: endpoint, make: make)
    }

    private static func connect(context: QueueContext, endpoint: String, make: () throws -> QueueSocket) throws -> (QueueSocket, QueueMonitor) {
        let socket = try make()
        do {
            let monitor = try QueueMonitor(context, watching: socket)
            try socket.connect(endpoint)
            return (socket, monitor)
        } catch {
            socket.close()
            throw error
        }
    }

    /// Whether the last handshake completed and the connection has not dropped since.
    var isUp: Bool { watch.isUp }

    /// Reads the monitor's events and does what they and the time call for; true when the link
    /// came up.
    @discardableResult
    func check(logger: Logger) -> Bool {
        var actions: [LinkWatch.Action] = []
        do {
            for event in try monitor.events() {
                if let action = watch.observe(event, now: monotonicSeconds()) { actions.append(action) }
            }
        } catch {
            logger.error("cannot read the queue socket's monitor", [key: endpoint, "error": "\(error)"])
        }
        actions += watch.check(now: monotonicSeconds())
        var cameUp = false
        for action in actions {
            switch action {
            case .connected:
                cameUp = true
                logger.info("connected to ingest", [key: endpoint])
            case .disconnected:
                logger.warning("lost the link to ingest: it closed the connection or stopped answering heartbeats; connecting again",
                               [key: endpoint])
            case .unreachable(let seconds, refused: true):
                logger.warning("cannot reach ingest: it refused this worker's handshake (with CURVE, list the worker's public key in "
                               + "that ingest's queue.curve.authorized_keys_file); connecting again every 5 s",
                               [key: endpoint, "down_seconds": String(Int(seconds))])
            case .unreachable(let seconds, refused: false):
                logger.warning("cannot reach ingest: no handshake completed (is it running and reachable? with CURVE, is "
                               + "queue.curve.server_public_key that ingest's public key?); still trying, and what this worker "
                               + "sends it waits until it is back",
                               [key: endpoint, "down_seconds": String(Int(seconds))])
            case .reconnect:
                reconnect(logger: logger)
            }
        }
        return cameUp
    }

    /// Closes the socket and opens it anew: a new connection and handshake.
    private func reconnect(logger: Logger) {
        close()
        do {
            (socket, monitor) = try Self.connect(context: context, endpoint: endpoint, make: make)
        } catch {
            logger.error("cannot open the queue socket", [key: endpoint, "error": "\(error)"])
        }
    }

    /// Closes the socket, then its monitor.
    func close() {
        socket.close()
        monitor.close()
    }
}
