import Core
import Queue

/// The worker's two links to one ingest: DEALER for jobs (its identity is the worker id) and PUSH
/// for results, with ZeroMQ heartbeats, CURVE clients of `serverKey` when `queue.curve` is set.
/// Used only by the queue thread.
final class QueueSockets {
    let jobs: IngestLink
    let results: IngestLink

    init(context: QueueContext, curve: CurveSettings?, serverKey: String?, jobsEndpoint: String, resultsEndpoint: String, id: String) throws {
        // Heartbeats close a link whose ingest stopped answering, which the link's monitor reports.
        func secured(_ socket: QueueSocket) throws -> QueueSocket {
            try socket.setHeartbeat(intervalMilliseconds: Pipeline.queueHeartbeatMilliseconds,
                                    timeoutMilliseconds: Pipeline.queueSilenceMilliseconds)
            if let curve, let serverKey { try socket.makeCurveClient(serverKey: serverKey, secretKey: curve.secretKey) }
            return socket
        }
        jobs = try IngestLink(context: context, key: "queue.jobs", endpoint: jobsEndpoint) {
            let socket = try QueueSocket(context, kind: .dealer)
            try socket.setIdentity(id)
            return try secured(socket)
        }
        do {
            results = try IngestLink(context: context, key: "queue.results", endpoint: resultsEndpoint) {
                let socket = try QueueSocket(context, kind: .push)
                try socket.setHighWaterMark(10_000)
                return try secured(socket)
            }
        } catch {
            jobs.close()
            throw error
        }
    }

    func close() {
        jobs.close()
        results.close()
    }
}
