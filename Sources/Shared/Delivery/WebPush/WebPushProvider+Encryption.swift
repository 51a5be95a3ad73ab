import Dispatch
import Foundation
import WebPush

extension WebPushProvider {
    /// Each push's body encrypted for its subscription (RFC 8291), in push order: nil for a push
    /// without a subscription, the error for one that could not be encrypted.
    ///
    /// Every message needs its own key agreement, the bulk of a push's CPU, and the agreements are
    /// independent: the pushes are split into one contiguous run per core, run on GCD's threads
    /// (`DispatchQueue.concurrentPerform`, at most as many at once as there are cores) with the
    /// calling thread taking a run itself. Only the encryption is spread; requests and outcomes are
    /// made on the calling thread in push order, as before.
    static func encrypt(_ pushes: [OutgoingPush], cores: Int = ProcessInfo.processInfo.activeProcessorCount)
        -> [Result<[UInt8], WebPushError>?] {
        let bodies = EncryptedBodies(count: pushes.count)
        defer { bodies.deallocate() }
        let runs = max(1, min(cores, pushes.count))
        DispatchQueue.concurrentPerform(iterations: runs) { run in
            for index in stride(from: pushes.count * run / runs, to: pushes.count * (run + 1) / runs, by: 1) {
                guard let subscription = pushes[index].subscription else { continue }
                do throws(WebPushError) {
                    bodies.slots[index] = .success(try WebPushEncryption.encrypt(pushes[index].body, for: subscription))
                } catch {
                    bodies.slots[index] = .failure(error)
                }
            }
        }
        return Array(bodies.slots)
    }
}

/// One slot per push of a batch being encrypted.
///
/// `@unchecked Sendable` invariant: slot `i` is written only by the one run that owns push `i`, and
/// the slots are read only after every run has returned (`concurrentPerform` returns after them).
private final class EncryptedBodies: @unchecked Sendable {
    let slots: UnsafeMutableBufferPointer<Result<[UInt8], WebPushError>?>

    init(count: Int) {
        slots = .allocate(capacity: count)
        slots.initialize(repeating: nil)
    }

    func deallocate() {
        slots.deinitialize()
        slots.deallocate()
    }
}
