#if canImport(Glibc)
import Glibc
#endif
import Core

/// Appends every push to a JSON-lines file instead of sending it (an app's `sink`):
/// `{"message", "hwid", "token", "platform": "apns"|"fcm"|"huawei", "payload"}`. One `write` per batch
/// on a file opened with `O_APPEND`, so lines from several workers never interleave.
public final class SinkProvider: PushProvider {
    private let descriptor: Lock<Int32>
    public let path: String

    public init(path: String) throws(DeliveryError) {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw DeliveryError(message: "cannot open sink \(path)", errno: errno) }
        self.path = path
        descriptor = Lock(fd)
    }

    deinit {
        descriptor.withLock { fd in
            if fd >= 0 { close(fd) }
        }
    }

    public func name(for channel: OutgoingPush.Channel) -> String { "sink" }

    /// The sink answers at once, but counts as a provider with a window of four batches: a worker
    /// then keeps several batches unrecorded and records those that came back in one commit, as it
    /// does for a nearby APNs, instead of committing once per batch.
    public var window: Int { 4 * Pipeline.deliveryBatchSize }

    public func deliver(_ pushes: [OutgoingPush], message: ShardWork) -> [DeliveryRecord] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(pushes.count * 512)
        for push in pushes {
            // {"hwid", "message", "payload", "platform", "token"}, with the payload spliced in as encoded.
            bytes.append(contentsOf: #"{"hwid":"#.utf8)
            JSON.writeString(push.target.hwid, to: &bytes)
            bytes.append(contentsOf: #","message":"#.utf8)
            JSON.writeString(message.messageCode, to: &bytes)
            bytes.append(contentsOf: #","payload":"#.utf8)
            bytes.append(contentsOf: push.body)
            bytes.append(contentsOf: #","platform":"#.utf8)
            JSON.writeString(push.channel.rawValue, to: &bytes)
            bytes.append(contentsOf: #","token":"#.utf8)
            JSON.writeString(push.target.pushToken, to: &bytes)
            bytes.append(contentsOf: "}\n".utf8)
        }
        let failure: Int32? = descriptor.withLock { fd in
            var offset = 0
            while offset < bytes.count {
                let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
                if written < 0 {
                    if errno == EINTR { continue }
                    return errno
                }
                offset += written
            }
            return nil
        }
        if let failure {
            let reason = "SinkWriteFailed(errno \(failure))"
            return pushes.map { DeliveryRecord(deviceID: $0.target.deviceID, outcome: .failed, reason: reason) }
        }
        return pushes.map { DeliveryRecord(deviceID: $0.target.deviceID, outcome: .sent) }
    }
}

/// A provider could not be set up or could not get credentials; keeps errno.
public struct DeliveryError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public let errno: Int32
    /// The cause may pass by itself (a credential endpoint that could not be reached or answered 5xx).
    public var transient = false

    public init(message: String, errno: Int32, transient: Bool = false) {
        self.message = message
        self.errno = errno
        self.transient = transient
    }

    public var description: String { errno == 0 ? message : "\(message): \(String(cString: strerror(errno)))" }
}
