import Foundation
import Core

/// The bookkeeping the APNs and FCM retry loops share: which pushes the current round sends, the
/// outcome of each finished push, and the last reason of each retried one (its outcome when the
/// attempts run out). Every push ends with exactly one outcome.
struct DeliveryRounds {
    let pushes: [OutgoingPush]
    private var outcomes: [DeliveryRecord?]
    private var lastReason: [String]
    /// Indices of the pushes the current round sends.
    private(set) var pending: [Int]
    private var retrying: [Int] = []
    private var delay = 0.0
    private var fresh = false

    init(_ pushes: [OutgoingPush]) {
        self.pushes = pushes
        outcomes = Array(repeating: nil, count: pushes.count)
        lastReason = Array(repeating: "Unknown", count: pushes.count)
        pending = Array(pushes.indices)
    }

    /// Whether this round must open a fresh connection (asked by a retry of the previous round); resets it.
    mutating func takeFresh() -> Bool {
        defer { fresh = false }
        return fresh
    }

    mutating func sent(_ index: Int) {
        outcomes[index] = DeliveryRecord(deviceID: pushes[index].target.deviceID, outcome: .sent)
    }

    /// A final failure; `deadToken` marks the push token as not to be used again.
    mutating func failed(_ index: Int, reason: String, deadToken: Bool = false) {
        let target = pushes[index].target
        outcomes[index] = DeliveryRecord(deviceID: target.deviceID, outcome: .failed, reason: reason,
                                         deadToken: deadToken ? target.pushToken : nil)
    }

    /// Sends the push again next round, after `seconds` at least, on a fresh connection if asked.
    mutating func retry(_ index: Int, reason: String, after seconds: Double = 0, fresh newConnection: Bool = false) {
        lastReason[index] = reason
        retrying.append(index)
        delay = max(delay, seconds)
        fresh = fresh || newConnection
    }

    /// Asks for a fresh connection next round without retrying a particular push.
    mutating func useFreshConnection() { fresh = true }

    /// The retried pushes become the next round's, after the longest wait they asked for (capped at
    /// 8 s, and skipped after the last round).
    mutating func endRound(last: Bool) {
        pending = retrying
        retrying = []
        if !pending.isEmpty, !last, delay > 0 { Thread.sleep(forTimeInterval: min(delay, 8)) }
        delay = 0
    }

    /// Fails every push still without an outcome with `reason`.
    mutating func failWaiting(reason: String) {
        for index in pushes.indices where outcomes[index] == nil { failed(index, reason: reason) }
    }

    /// Every outcome, in order; a push still without one fails with its last reason.
    func result() -> [DeliveryRecord] {
        pushes.indices.map { index in
            outcomes[index] ?? DeliveryRecord(deviceID: pushes[index].target.deviceID, outcome: .failed, reason: lastReason[index])
        }
    }
}
