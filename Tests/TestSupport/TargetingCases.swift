import Core
import SDKClient

/// What the targeting tests of every backend share: 400 devices with a seeded mix of the seven tag
/// types and languages, conditions covering every operator of every type, random conditions, and
/// the reference semantics a backend's SQL must agree with.
package enum TargetingCases {
    package struct Device {
        package let hwid: String
        package let language: String?
        package let tags: [String: TagValue]
        package let registration: DeviceRegistration
    }

    /// The devices to register (the `Build` tag, a version, must be defined first); `rng` goes on
    /// to pick the random conditions.
    package static func devices(app: String, _ rng: inout SplitMix64) throws -> [Device] {
    var devices: [Device] = []
    let january = TagDate.parse("2024-01-01") ?? 0
    for number in 0..<400 {
        func maybe(_ value: TagValue) -> TagValue? { number == 0 || rng.next() % 5 != 0 ? value : nil }
        var tags: [String: TagValue] = [:]
        tags["Level"] = maybe(.integer(Int64.random(in: 0...20, using: &rng)))
        tags["Score"] = maybe(.decimal(Double(Int.random(in: 0...40, using: &rng)) / 4))
        tags["City"] = maybe(.string(["Lyon", "Paris", "Nice", "Oslo", "42"].randomElement(using: &rng) ?? ""))
        tags["Fav"] = maybe(.list(["a", "b", "c", "d", "e"].filter { _ in rng.next() % 10 < 3 }))
        tags["Born"] = maybe(.date(january + Int64.random(in: 0..<30, using: &rng) * 86_400
                                   + Int64.random(in: 0..<1440, using: &rng) / 4 * 240))
        tags["VIP"] = maybe(.boolean(rng.next() % 2 == 0))
        let parts = (0..<Int.random(in: 1...3, using: &rng)).map { _ in String(Int.random(in: 0...12, using: &rng)) }
        tags["Build"] = maybe(.version(parts.joined(separator: ".")))
        let language = number == 0 ? "en" : ["en", "fr", "de", "zh-Hans", nil].randomElement(using: &rng) ?? nil
        var json = tags.mapValues(\.json)
        if number > 0, case .date(let seconds) = tags["Born"], rng.next() % 2 == 0 { json["Born"] = .int(seconds) }
        let hwid = "H\(number)"
        let registration = DeviceRegistration(app: app, hwid: hwid, pushToken: "tok\(number)", gateway: nil,
                                              attributes: DeviceAttributes(platform: 3, language: language),
                                              tags: try TagUpdate.parse(json))
        devices.append(Device(hwid: hwid, language: language, tags: tags, registration: registration))
    }
    return devices
    }

    /// The hwids of `devices` that `conditions` joined by `op` select, by the reference semantics.
    package static func expected(_ devices: [Device], _ conditions: [TagCondition], _ op: ConditionsOperator) -> Set<String> {
        Set(devices.filter { device in
            let results = conditions.map { condition in
                matches(condition, condition.tag == "Language"
                    ? device.language.map { TagValue.string(TagCondition.baseLanguage($0)) } : device.tags[condition.tag])
            }
            return op == .and ? !results.contains(false) : results.contains(true)
        }.map(\.hwid))
    }

    /// Conditions covering every operator of every type, including boundary operands.
    package static let fixedConditions: [JSON] = [
        ["Level", "EQ", 5], ["Level", "NOTEQ", 5], ["Level", "GTE", 10], ["Level", "LTE", "7"], ["Level", "GTE", 9.5],
        ["Level", "BETWEEN", [3, 8]], ["Level", "IN", [1, 2, 3]], ["Level", "NOTIN", [1, 2, 3]], ["Level", "NOTSET"], ["Level", "ANY"],
        ["Score", "EQ", 2.5], ["Score", "NOTEQ", 2.5], ["Score", "GTE", 5], ["Score", "LTE", 1.25], ["Score", "BETWEEN", [1.5, 4]],
        ["Score", "IN", [0.5, 1, 7.75]], ["Score", "NOTIN", [2.5, 3]], ["Score", "NOTSET"], ["Score", "ANY"],
        ["City", "EQ", "Lyon"], ["City", "EQ", 42], ["City", "NOTEQ", "Lyon"], ["City", "IN", ["Nice", "Oslo"]],
        ["City", "NOTIN", ["Nice", "Oslo"]], ["City", "NOTSET"], ["City", "ANY"],
        ["Fav", "IN", ["a", "b"]], ["Fav", "IN", "c"], ["Fav", "EQ", "d"], ["Fav", "NOTIN", ["a", "e"]], ["Fav", "NOTSET"], ["Fav", "ANY"],
        ["Born", "EQ", "2024-01-05"], ["Born", "EQ", "2024-01-05 23:59"], ["Born", "NOTEQ", "2024-01-05"], ["Born", "EQ", "20 days ago"],
        ["Born", "IN", ["2024-01-02", "2024-01-09 10:00", 1_705_000_000]], ["Born", "NOTIN", ["2024-01-02", "2024-01-03"]],
        ["Born", "GTE", "2024-01-20 12:00"], ["Born", "LTE", "2024-01-10"], ["Born", "GTE", "10 days ago"], ["Born", "LTE", 1_705_000_000],
        ["Born", "BETWEEN", ["2024-01-10 06:00", "2024-01-12 18:00"]], ["Born", "NOTSET"], ["Born", "ANY"],
        ["VIP", "EQ", true], ["VIP", "EQ", "0"], ["VIP", "NOTSET"], ["VIP", "ANY"],
        ["Build", "EQ", "3"], ["Build", "NOTEQ", "3.0"], ["Build", "GTE", "5.10"], ["Build", "LTE", "2.9"],
        ["Build", "BETWEEN", ["1.2", "8.0.4"]], ["Build", "IN", ["1", "2", "3.3"]], ["Build", "NOTIN", ["1", "2"]], ["Build", "NOTSET"], ["Build", "ANY"],
        ["Language", "EQ", "fr"], ["Language", "NOTEQ", "fr"], ["Language", "IN", ["de", "zh-Hans"]], ["Language", "NOTIN", ["en"]],
        ["Language", "NOTSET"], ["Language", "ANY"],
    ]

    /// A random valid condition with random operands.
    package static func randomCondition(_ rng: inout SplitMix64) -> JSON {
        func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }
        func some<T>(_ items: [T], _ make: (T) -> JSON) -> JSON {
            let chosen = items.filter { _ in rng.next() % 3 == 0 }
            return .array((chosen.isEmpty ? [items[0]] : chosen).map(make))
        }
        func level() -> JSON { .int(Int64.random(in: -1...21, using: &rng)) }
        func score() -> JSON { .double(Double(Int.random(in: -1...41, using: &rng)) / 4) }
        func day() -> JSON {
            .string(TagDate.format(1_704_067_200 + Int64.random(in: -1...31, using: &rng) * 86_400 + Int64.random(in: 0..<96, using: &rng) * 900))
        }
        func build() -> JSON {
            .string((0..<Int.random(in: 1...3, using: &rng)).map { _ in String(Int.random(in: 0...12, using: &rng)) }.joined(separator: "."))
        }
        switch rng.next() % 8 {
        case 0:
            let op = pick(["EQ", "NOTEQ", "GTE", "LTE", "IN", "NOTIN", "BETWEEN"])
            switch op {
            case "IN", "NOTIN": return ["Level", .string(op), .array((0..<3).map { _ in level() })]
            case "BETWEEN":
                let (a, b) = (Int64.random(in: -1...21, using: &rng), Int64.random(in: -1...21, using: &rng))
                return ["Level", "BETWEEN", [.int(min(a, b)), .int(max(a, b))]]
            default: return ["Level", .string(op), level()]
            }
        case 1:
            let op = pick(["EQ", "NOTEQ", "GTE", "LTE", "IN", "NOTIN", "BETWEEN"])
            switch op {
            case "IN", "NOTIN": return ["Score", .string(op), .array((0..<4).map { _ in score() })]
            case "BETWEEN":
                let (a, b) = (Double(Int.random(in: 0...40, using: &rng)) / 4, Double(Int.random(in: 0...40, using: &rng)) / 4)
                return ["Score", "BETWEEN", [.double(min(a, b)), .double(max(a, b))]]
            default: return ["Score", .string(op), score()]
            }
        case 2:
            let cities = ["Lyon", "Paris", "Nice", "Oslo", "42", "Rome"]
            let op = pick(["EQ", "NOTEQ", "IN", "NOTIN", "NOTSET", "ANY"])
            return op.hasSuffix("IN") ? ["City", .string(op), some(cities, JSON.string)] : ["City", .string(op), .string(pick(cities))]
        case 3:
            let items = ["a", "b", "c", "d", "e", "z"]
            let op = pick(["EQ", "IN", "NOTIN", "NOTSET", "ANY"])
            return op == "EQ" ? ["Fav", "EQ", .string(pick(items))] : ["Fav", .string(op), some(items, JSON.string)]
        case 4:
            let op = pick(["EQ", "NOTEQ", "GTE", "LTE", "IN", "NOTIN", "BETWEEN"])
            switch op {
            case "IN", "NOTIN": return ["Born", .string(op), .array((0..<3).map { _ in day() })]
            case "BETWEEN":
                let (a, b) = (day(), day())
                let (x, y) = (a.stringValue ?? "", b.stringValue ?? "")
                return ["Born", "BETWEEN", x <= y ? [a, b] : [b, a]]
            default: return ["Born", .string(op), rng.next() % 4 == 0 ? .string("\(Int.random(in: 0...35, using: &rng)) days ago") : day()]
            }
        case 5:
            return ["VIP", .string(pick(["EQ", "EQ", "NOTSET", "ANY"])), pick([true, false, 0, 1, "true", "0"] as [JSON])]
        case 6:
            let op = pick(["EQ", "NOTEQ", "GTE", "LTE", "IN", "NOTIN", "BETWEEN"])
            switch op {
            case "IN", "NOTIN": return ["Build", .string(op), .array((0..<3).map { _ in build() })]
            case "BETWEEN":
                let (a, b) = (build(), build())
                let (x, y) = (TagVersion.encode(a.stringValue ?? "") ?? 0, TagVersion.encode(b.stringValue ?? "") ?? 0)
                return ["Build", "BETWEEN", x <= y ? [a, b] : [b, a]]
            default: return ["Build", .string(op), build()]
            }
        default:
            let languages = ["en", "fr", "de", "zh-Hans", "it"]
            let op = pick(["EQ", "NOTEQ", "IN", "NOTIN", "NOTSET", "ANY"])
            return op.hasSuffix("IN") ? ["Language", .string(op), some(languages, JSON.string)]
                : ["Language", .string(op), .string(pick(languages))]
        }
    }

    /// The reference semantics, on the generated value (nil: tag not set).
    package static func matches(_ condition: TagCondition, _ value: TagValue?) -> Bool {
        switch condition.op {
        case .notSet: return value == nil
        case .any: return value != nil
        default: break
        }
        guard let value else { return false }
        let texts = condition.operands.compactMap { operand -> String? in
            if case .text(let text) = operand { return text }
            return nil
        }
        let numbers = condition.operands.compactMap { operand -> Double? in
            if case .number(let number) = operand { return number }
            return nil
        }
        switch value {
        case .list(let items):
            let hit = items.contains { texts.contains($0) }
            return condition.op == .notIn ? !hit : hit
        case .string(let text):
            switch condition.op {
            case .eq, .inList: return texts.contains(text)
            case .notEq, .notIn: return !texts.contains(text)
            default: return false
            }
        case .date(let seconds) where [.eq, .notEq, .inList, .notIn].contains(condition.op):
            let day = TagDate.format(seconds).prefix(10)
            let same = numbers.contains { TagDate.format(Int64($0)).prefix(10) == day }
            return condition.op == .eq || condition.op == .inList ? same : !same
        default:
            let number: Double
            switch value {
            case .integer(let integer): number = Double(integer)
            case .decimal(let decimal): number = decimal
            case .date(let seconds): number = Double(seconds)
            case .boolean(let flag): number = flag ? 1 : 0
            case .version(let text): number = Double(TagVersion.encode(text) ?? -1)
            case .string, .list: return false
            }
            switch condition.op {
            case .eq, .inList: return numbers.contains(number)
            case .notEq, .notIn: return !numbers.contains(number)
            case .gte: return numbers.first.map { number >= $0 } ?? false
            case .lte: return numbers.first.map { number <= $0 } ?? false
            case .between: return numbers.count == 2 && numbers[0] <= number && number <= numbers[1]
            case .notSet, .any: return false
            }
        }
    }
}
