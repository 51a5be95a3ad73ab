import Core
import Foundation

/// The fleet's model of its installs and of what they do: the platforms' shares, the OneSignal
/// helper's share, the opt-out rate, the tag churn and the mix of SDK calls in a session.
/// `--scenario FILE` reads one from JSON (`ops/load/default-scenario.json` is `builtIn`, written
/// out); a key the file leaves out keeps its built-in value, and `--onesignal`, `--huawei` and
/// `--web` given on the command line override the file.
///
/// Shares are fractions from 0 to 1. The per-session draws roll a number from 0 to 99, so the
/// shares of `tagChurn`, `optOut` and `calls` act in steps of 1%.
struct Scenario: Equatable, Sendable {
    /// `platforms.ios`: the share of app installs (not browsers) that run iOS; the rest run Android.
    var iosShare = 0.45
    /// `platforms.huawei`: the share of Android installs on Huawei phones without Google services.
    var huaweiShare = 0.0
    /// `platforms.web`: the share of all devices that are browsers with the Pushwoosh Web SDK.
    var webShare = 0.0
    /// `platforms.firefox`: the share of browsers that are Firefox (`device_type` 12); the rest Chrome (11).
    var firefoxShare = 0.25
    /// `onesignal`: the share of all devices (iOS apps) that talk through the OneSignal helper.
    var oneSignalShare = 0.0
    /// `opt_out`: the share of iOS SDK installs whose user denied notifications (at most 0.95: the
    /// last 5% allow alerts and sounds without badges).
    var optOut = 0.10
    /// `tag_churn`: the chance that a session after the first changes tags between two screens.
    var tagChurn = 0.35
    /// `calls.get_tags_after_open`: Android and browser sessions reading the tags after
    /// applicationOpen (the iOS SDK always does).
    var getTagsAfterOpen = 0.30
    /// `calls.screens_per_session`: screens (pages) a session visits, 1 to this many.
    var screensPerSession = 5
    /// `calls.custom_events.one`, `.two`: sessions with one, with two custom events.
    var oneCustomEvent = 0.50
    var twoCustomEvents = 0.15
    /// `calls.purchase`: sessions with an in-app purchase.
    var purchase = 0.03
    /// `calls.session_end.idle`, `.exit`: sessions ending with PW_UserIdle, with PW_ApplicationExit
    /// (the rest end without an event).
    var idleEnding = 0.25
    var exitEnding = 0.60
    /// `calls.onesignal.edit_tags`, `.unsubscribe`: a helper device's later sessions that change
    /// tags, that unsubscribe (the rest subscribe again).
    var oneSignalEditTags = 0.70
    var oneSignalUnsubscribe = 0.05

    /// Today's model: what `ops/load/default-scenario.json` says.
    static let builtIn = Scenario()

    /// A share key of the file: its dotted path, the field, and the largest value it takes.
    struct Share: Sendable {
        let key: String
        let field: any WritableKeyPath<Scenario, Double> & Sendable
        var most = 1.0
    }

    static let shares: [Share] = [
        Share(key: "platforms.ios", field: \.iosShare), Share(key: "platforms.huawei", field: \.huaweiShare),
        Share(key: "platforms.web", field: \.webShare), Share(key: "platforms.firefox", field: \.firefoxShare),
        Share(key: "onesignal", field: \.oneSignalShare), Share(key: "opt_out", field: \.optOut, most: 0.95),
        Share(key: "tag_churn", field: \.tagChurn), Share(key: "calls.get_tags_after_open", field: \.getTagsAfterOpen),
        Share(key: "calls.custom_events.one", field: \.oneCustomEvent), Share(key: "calls.custom_events.two", field: \.twoCustomEvents),
        Share(key: "calls.purchase", field: \.purchase), Share(key: "calls.session_end.idle", field: \.idleEnding),
        Share(key: "calls.session_end.exit", field: \.exitEnding), Share(key: "calls.onesignal.edit_tags", field: \.oneSignalEditTags),
        Share(key: "calls.onesignal.unsubscribe", field: \.oneSignalUnsubscribe),
    ]
    static let screensKey = "calls.screens_per_session"
    /// Shares that split one draw, so their sum is at most 1.
    static let splits = [("calls.custom_events.one", "calls.custom_events.two"), ("calls.session_end.idle", "calls.session_end.exit"),
                         ("calls.onesignal.edit_tags", "calls.onesignal.unsubscribe")]

}

extension Scenario {
    /// The scenario of the JSON file at `path`; a problem names the flag, the file and the key.
    init(path: String, flag: String = "--scenario") throws(FleetOptions.Problem) {
        guard let data = FileManager.default.contents(atPath: path) else { throw FleetOptions.Problem("\(flag): cannot read \(path)") }
        do {
            try self.init(json: try JSON.parse(Array(data)))
        } catch let problem as FleetOptions.Problem {
            throw FleetOptions.Problem("\(flag) \(path): \(problem.description)")
        } catch {
            throw FleetOptions.Problem("\(flag) \(path): not JSON (\(error))")
        }
    }

    /// The scenario a JSON object describes, starting from `builtIn`.
    init(json: JSON) throws(FleetOptions.Problem) {
        guard json.objectValue != nil else { throw FleetOptions.Problem("the file must hold a JSON object") }
        var leaves: [(key: String, value: JSON)] = []
        func flatten(_ value: JSON, _ prefix: String) {
            guard case .object(let members) = value else { return leaves.append((prefix, value)) }
            for (name, member) in members.sorted(by: { $0.key < $1.key }) { flatten(member, prefix.isEmpty ? name : prefix + "." + name) }
        }
        flatten(json, "")
        self = .builtIn
        for (key, value) in leaves {
            if key == Self.screensKey {
                guard case .int(let count) = value, (1...20).contains(count) else {
                    throw FleetOptions.Problem("\(key) must be a whole number from 1 to 20, got \(value.text)")
                }
                screensPerSession = Int(count)
                continue
            }
            guard let share = Self.shares.first(where: { $0.key == key }) else {
                let known = Self.shares.map(\.key) + [Self.screensKey]
                let parent = known.contains { $0.hasPrefix(key + ".") }
                throw FleetOptions.Problem(parent ? "\(key) must be an object" : "unknown key \(key) (known: \(known.joined(separator: ", ")))")
            }
            guard let number = value.numberValue, number >= 0, number <= share.most else {
                throw FleetOptions.Problem("\(key) must be a fraction from 0 to \(JSON.double(share.most).text), got \(value.text)")
            }
            self[keyPath: share.field] = number
        }
        for (first, second) in Self.splits {
            let sum = Self.shares.filter { $0.key == first || $0.key == second }.reduce(0) { $0 + self[keyPath: $1.field] }
            if sum > 1 { throw FleetOptions.Problem("\(first) and \(second) share one draw: their sum must be at most 1") }
        }
    }

    /// The scenario as the JSON file writes it.
    var json: JSON {
        var root: [String: JSON] = [:]
        func put(_ path: [Substring], _ value: JSON, into members: inout [String: JSON]) {
            let name = String(path[0])
            guard path.count > 1 else { return members[name] = value }
            var inner = members[name]?.objectValue ?? [:]
            put(Array(path.dropFirst()), value, into: &inner)
            members[name] = .object(inner)
        }
        for share in Self.shares { put(share.key.split(separator: "."), .double(self[keyPath: share.field]), into: &root) }
        put(Self.screensKey.split(separator: "."), .int(Int64(screensPerSession)), into: &root)
        return .object(root)
    }
}

extension Scenario {
    /// `share` in whole percent: a roll from 0 to 99 below it falls within the share.
    @inline(__always)
    static func percent(_ share: Double) -> UInt64 { UInt64((share * 100).rounded()) }
}

private extension JSON {
    /// A JSON number as a Double.
    var numberValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }
}
