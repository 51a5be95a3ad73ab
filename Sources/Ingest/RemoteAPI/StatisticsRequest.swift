import Foundation
import Core

/// A statistics request of the Remote API (`getMsgStats`, `getAppStats`) that `getResults` answers.
/// Pushwoosh runs such requests later; Herald computes the results when they are asked for, from
/// what it stores at that moment, so the request id is the request itself: its parameters as
/// base64url JSON. An id therefore survives restarts of ingest and never expires, and `getResults`
/// checks the token against the application the id names.
struct StatisticsRequest: Equatable {
    enum Subject: Equatable {
        case message(String)
        /// An application over `[from, to)` (unix seconds).
        case application(String, from: Int64, to: Int64)
    }

    let subject: Subject

    init(_ subject: Subject) { self.subject = subject }

    /// The request an id names; nil when it is not one Herald made.
    init?(id: String) {
        var base64 = id.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard id.utf8.count <= 512, let data = Data(base64Encoded: base64), let json = try? JSON.parse(Array(data)) else { return nil }
        if let code = json["message"]?.stringValue {
            subject = .message(code)
        } else if let app = json["application"]?.stringValue, case .int(let from)? = json["from"], case .int(let to)? = json["to"] {
            subject = .application(app, from: from, to: to)
        } else {
            return nil
        }
    }

    var id: String {
        let json: JSON
        switch subject {
        case .message(let code): json = ["message": .string(code)]
        case .application(let app, let from, let to): json = ["application": .string(app), "from": .int(from), "to": .int(to)]
        }
        return Data(json.text.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}

/// The time buckets of `getResults` rows, picked from the period's length as Pushwoosh does: over
/// a year yearly, over a month monthly, over a day daily, over three hours hourly, else minutely.
enum StatisticsFormatter: String {
    case minutely, hourly, daily, monthly, yearly

    init(period seconds: Int64) {
        switch seconds {
        case (365 * 86_400 + 1)...: self = .yearly
        case (31 * 86_400 + 1)...: self = .monthly
        case (86_400 + 1)...: self = .daily
        case (3 * 3_600 + 1)...: self = .hourly
        default: self = .minutely
        }
    }

    /// The start of the bucket holding `time` (UTC).
    func bucket(_ time: Int64) -> Int64 {
        switch self {
        case .minutely: return time - Self.modulo(time, 60)
        case .hourly: return time - Self.modulo(time, 3_600)
        case .daily: return time - Self.modulo(time, 86_400)
        case .monthly, .yearly:
            let day = TagDate.format(time)
            let start = self == .monthly ? String(day.prefix(7)) + "-01" : String(day.prefix(4)) + "-01-01"
            return TagDate.parse(start) ?? time
        }
    }

    private static func modulo(_ value: Int64, _ divisor: Int64) -> Int64 { ((value % divisor) + divisor) % divisor }

    /// `rows` of getResults: the counts summed per bucket and action, in time order.
    func rows(_ counts: [ActivityCount], actions: [String]) -> JSON {
        var sums: [Int64: [String: Int]] = [:]
        for count in counts { sums[bucket(count.minute), default: [:]][count.action, default: 0] += count.count }
        var rows: [JSON] = []
        for time in sums.keys.sorted() {
            for action in actions {
                guard let count = sums[time]?[action] else { continue }
                rows.append(["datetime": .string(TagDate.format(time) + ":00"), "action": .string(action), "count": .int(Int64(count))])
            }
        }
        return .array(rows)
    }
}
