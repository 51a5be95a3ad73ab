import Foundation
import Core

/// Turns one object of `createMessage.notifications` into a `MessageSpec`, or an `ArgumentError`
/// that names the field (`notifications[2].send_date: ...`). Unknown fields are ignored, as the
/// Pushwoosh API has many that Herald does not act on.
struct NotificationParser {
    let fields: [String: JSON]
    /// Where the fields are (`notifications[2]`); nil for the request's own fields (createTargetedMessage).
    let path: String?
    let tagTypes: [String: TagType]
    let now: Int64

    func fail(_ field: String, _ problem: String) -> ArgumentError { ArgumentError("\(path.map { $0 + "." } ?? "")\(field): \(problem)") }

    func parse() throws -> MessageSpec {
        let iosSilent = try bool("ios_silent") ?? false
        let androidSilent = try bool("android_silent") ?? false
        let content = try text("content")
        let platforms = try intArray("platforms")
        // Content is needed only where a notification is shown: a targeted platform that is not
        // silent and has no content of its own. Platforms Herald does not deliver to need none.
        // Browsers show every push and have no content of their own: naming one in `platforms`
        // needs `content`.
        let targets = Set(platforms ?? Platform.deliverable).intersection(Platform.deliverable)
        let iosShows = targets.contains(where: Platform.usesAPNs) && !iosSilent
        let androidShows = targets.contains(where: Platform.usesAndroidOptions) && !androidSilent
        let webNamed = platforms?.contains(where: Platform.usesWebPush) ?? false
        if content == nil, (iosShows && fields["ios_content"] == nil) || (androidShows && fields["android_content"] == nil) || webNamed {
            throw fail("content", "is required (unless the message is silent, or gives ios_content / android_content, on every platform it reaches; "
                + "browsers need it)")
        }
        var spec = MessageSpec(content: content ?? [:])
        spec.title = try text("title")
        spec.subtitle = try text("subtitle")
        spec.data = try data()
        spec.link = try string("link")
        spec.richMedia = try string("rich_media")
        spec.schedule = try schedule()
        spec.inbox = try inbox(sendAt: spec.schedule.earliestDueAt)

        spec.platforms = platforms
        if let platforms {
            guard !platforms.isEmpty else { throw fail("platforms", "must not be empty") }
            if let unknown = platforms.first(where: { !Platform.known.contains($0) }) {
                throw fail("platforms", "\(unknown) is not a known device_type code")
            }
            // Codes of platforms Herald does not deliver to are accepted and match no device.
        }
        try target(&spec)

        if let rate = try int("send_rate") {
            guard rate >= 1 else { throw fail("send_rate", "must be at least 1 push per second") }
            spec.sendRate = Int(rate)
        }
        let cappingDays = try int("capping_days"), cappingCount = try int("capping_count")
        if cappingDays != nil || cappingCount != nil {
            guard let days = cappingDays, let count = cappingCount else {
                throw fail(cappingDays == nil ? "capping_days" : "capping_count", "capping_days and capping_count go together")
            }
            guard (1...365).contains(days) else { throw fail("capping_days", "must be between 1 and 365") }
            guard count >= 1 else { throw fail("capping_count", "must be at least 1") }
            spec.cappingDays = Int(days)
            spec.cappingCount = Int(count)
        }

        spec.ios.title = try text("ios_title")
        spec.ios.subtitle = try text("ios_subtitle")
        spec.ios.content = try text("ios_content")
        spec.ios.badges = try badge("ios_badges")
        spec.ios.sound = try string("ios_sound")
        spec.ios.ttl = try nonNegative("ios_ttl")
        spec.ios.silent = iosSilent
        spec.ios.categoryID = try string("ios_category_id")
        spec.ios.threadID = try string("ios_thread_id")
        spec.ios.collapseID = try string("ios_collapse_id")
        if let collapse = spec.ios.collapseID, collapse.utf8.count > 64 { throw fail("ios_collapse_id", "is longer than 64 bytes") }
        spec.ios.attachment = try string("ios_attachment")
        spec.ios.rootParams = try object("ios_root_params")
        if let level = try string("ios_interruption_level") {
            guard ["passive", "active", "time-sensitive", "critical"].contains(level) else {
                throw fail("ios_interruption_level", "must be passive, active, time-sensitive or critical")
            }
            spec.ios.interruptionLevel = level
        }

        spec.android.header = try text("android_header")
        spec.android.content = try text("android_content")
        spec.android.sound = try string("android_sound")
        if let priority = try int("android_priority") {
            guard (-2...2).contains(priority) else { throw fail("android_priority", "must be between -2 and 2") }
            spec.android.priority = Int(priority)
        }
        spec.android.icon = try string("android_icon")
        spec.android.customIcon = try string("android_custom_icon")
        spec.android.banner = try string("android_banner")
        spec.android.badges = try badge("android_badges")
        spec.android.ttl = try nonNegative("android_gcm_ttl")
        spec.android.vibration = try bool("android_vibration")
        spec.android.led = try string("android_led")
        spec.android.iconBackgroundColor = try string("android_ibc")
        spec.android.silent = androidSilent
        spec.android.rootParams = try object("android_root_params")
        spec.web = try web()

        if let problem = PayloadBuilder.sizeCheck(spec) { throw fail("content", problem) }
        if spec.platforms?.contains(where: Platform.usesWebPush) ?? true, let problem = PayloadBuilder.webSizeCheck(spec) {
            throw fail("content", problem)
        }
        return spec
    }

    /// The audience: `users`, else `devices`, else `conditions` with `conditions_operator`.
    func target(_ spec: inout MessageSpec) throws {
        spec.users = try stringArray("users", limit: 1000)
        if spec.users == nil { spec.devices = try stringArray("devices", limit: 1000) }
        if fields["filter"].map({ $0 != .null }) == true {
            if fields["conditions"].map({ $0 != .null }) == true {
                throw fail("filter", "filter and conditions cannot be combined; use one of them")
            }
            throw fail("filter", "saved filters are not supported by Herald; send conditions instead")
        }
        if spec.users == nil && spec.devices == nil {
            (spec.conditions, spec.conditionsOperator) = try conditions()
        }
    }

    // MARK: - Fields

    func value(_ field: String) -> JSON? {
        guard let value = fields[field], value != .null else { return nil }
        return value
    }

    func string(_ field: String) throws -> String? {
        guard let value = value(field) else { return nil }
        guard let text = value.lenientString else { throw fail(field, "must be a string, found \(value.typeName)") }
        return text.isEmpty ? nil : text
    }

    func int(_ field: String) throws -> Int64? {
        guard let value = value(field) else { return nil }
        guard let number = value.lenientInt else { throw fail(field, "must be an integer, found \(value.typeName)") }
        return number
    }

    func nonNegative(_ field: String) throws -> Int64? {
        guard let number = try int(field) else { return nil }
        guard number >= 0 else { throw fail(field, "must not be negative") }
        return number
    }

    func bool(_ field: String) throws -> Bool? {
        guard let value = value(field) else { return nil }
        guard let flag = value.lenientBool else { throw fail(field, "must be a boolean or 0/1, found \(value.typeName)") }
        return flag
    }

    func object(_ field: String) throws -> [String: JSON]? {
        guard let value = value(field) else { return nil }
        guard let members = value.objectValue else { throw fail(field, "must be an object, found \(value.typeName)") }
        return members
    }

    /// A string, or an object of language → string. Language keys are lower-cased.
    func text(_ field: String) throws -> MessageSpec.LocalizedText? {
        guard let value = value(field) else { return nil }
        switch value {
        case .string(let text):
            return text.isEmpty ? nil : ["default": text]
        case .object(let members):
            var result: MessageSpec.LocalizedText = [:]
            for (language, text) in members {
                guard let text = text.stringValue else { throw fail("\(field).\(language)", "must be a string") }
                result[language.lowercased()] = text
            }
            guard !result.isEmpty else { throw fail(field, "must not be empty") }
            return result
        default:
            throw fail(field, "must be a string or an object of language → text, found \(value.typeName)")
        }
    }

    func stringArray(_ field: String, limit: Int) throws -> [String]? {
        guard let value = value(field) else { return nil }
        guard let items = value.arrayValue, let strings = items.mapAll(\.stringValue) else {
            throw fail(field, "must be an array of strings")
        }
        guard !strings.isEmpty else { throw fail(field, "must not be empty") }
        guard strings.count <= limit else { throw fail(field, "has \(strings.count) entries; at most \(limit) per notification") }
        return strings
    }

    func intArray(_ field: String) throws -> [Int]? {
        guard let value = value(field) else { return nil }
        guard let items = value.arrayValue, let numbers = items.mapAll(\.lenientInt) else {
            throw fail(field, "must be an array of integers")
        }
        return numbers.map { Int($0) }
    }

    /// `data`: an object, or a string holding one.
    func data() throws -> JSON? {
        guard let value = value("data") else { return nil }
        switch value {
        case .object: return value
        case .string(let text):
            guard let parsed = try? JSON.parse(text), case .object = parsed else {
                throw fail("data", "must be an object or a string holding a JSON object")
            }
            return parsed
        default:
            throw fail("data", "must be an object, found \(value.typeName)")
        }
    }

    /// `ios_badges` / `android_badges`: an integer, or `"+n"` / `"-n"`.
    func badge(_ field: String) throws -> MessageSpec.BadgeChange? {
        guard let value = value(field) else { return nil }
        if case .string(let text) = value, let sign = text.first, sign == "+" || sign == "-" {
            guard let delta = Int64(text) else { throw fail(field, "must be an integer or \"+n\"/\"-n\"") }
            return .add(delta)
        }
        guard let absolute = value.lenientInt else { throw fail(field, "must be an integer or \"+n\"/\"-n\"") }
        guard absolute >= 0 else { throw fail(field, "an absolute badge must not be negative (use \"-n\" to decrease)") }
        return .set(absolute)
    }

    /// `send_date` (`now` or `YYYY-MM-DD HH:mm`), `timezone` (an IANA name, default UTC) and
    /// `ignore_user_timezone` (default true: every device at the same instant).
    func schedule() throws -> MessageSpec.Schedule {
        let date = try string("send_date") ?? "now"
        if date.lowercased() == "now" { return MessageSpec.Schedule(sendAt: now, perDeviceTimezone: false) }
        guard let wallClock = TagDate.parse(date), date.count >= 16 else {
            throw fail("send_date", "must be \"now\" or \"YYYY-MM-DD HH:mm\", found \"\(date.prefix(40))\"")
        }
        if try bool("ignore_user_timezone") == false {
            var schedule = MessageSpec.Schedule(sendAt: wallClock, perDeviceTimezone: true)
            schedule.givenSendDate = date
            return schedule
        }
        var offset: Int64 = 0
        let zoneName = try string("timezone")
        if let name = zoneName {
            guard let zone = TimeZone(identifier: name) else { throw fail("timezone", "unknown time zone \"\(name.prefix(64))\"") }
            // The offset in force at that wall-clock time (found from the UTC guess, then corrected).
            let guess = Date(timeIntervalSince1970: TimeInterval(wallClock))
            let first = Int64(zone.secondsFromGMT(for: guess))
            offset = Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: TimeInterval(wallClock - first))))
        }
        var schedule = MessageSpec.Schedule(sendAt: wallClock - offset, perDeviceTimezone: false)
        (schedule.givenSendDate, schedule.givenTimezone) = (date, zoneName)
        return schedule
    }

    /// The inbox options: `inbox_date` (`YYYY-MM-DD`, kept through that day, or `YYYY-MM-DD HH:mm`
    /// with optional `:ss`, UTC; after the send date), or instead `inbox_days` (1–30 days after each push), and
    /// `inbox_image` (an http(s) URL). Any of them makes the message an inbox message.
    func inbox(sendAt: Int64) throws -> MessageSpec.InboxOptions? {
        let date = try string("inbox_date"), days = try int("inbox_days"), image = try string("inbox_image")
        guard date != nil || days != nil || image != nil else { return nil }
        var options = MessageSpec.InboxOptions(image: image)
        if let date {
            guard days == nil else { throw fail("inbox_days", "inbox_date and inbox_days cannot be combined; use one of them") }
            guard let start = TagDate.parse(date) else {
                throw fail("inbox_date", "must be \"YYYY-MM-DD\", \"YYYY-MM-DD HH:mm\" or \"YYYY-MM-DD HH:mm:ss\" (UTC), found \"\(date.prefix(40))\"")
            }
            let expiry = date.count == 10 ? start + 86_400 : start
            guard expiry > max(now, sendAt) else { throw fail("inbox_date", "\(date) is not after the message's send date") }
            options.expiresAt = expiry
        }
        if let days {
            guard (1...Int64(MessageSpec.InboxOptions.defaultDays)).contains(days) else {
                throw fail("inbox_days", "must be between 1 and \(MessageSpec.InboxOptions.defaultDays)")
            }
            options.days = Int(days)
        }
        if let image {
            let lowered = image.lowercased()
            guard lowered.hasPrefix("https://") || lowered.hasPrefix("http://"), image.utf8.count <= 2048 else {
                throw fail("inbox_image", "must be an http(s) URL of at most 2048 bytes")
            }
        }
        return options
    }

    /// `conditions` and `conditions_operator`.
    func conditions() throws -> ([TagCondition], ConditionsOperator) {
        var op = ConditionsOperator.and
        if let name = try string("conditions_operator") {
            guard let parsed = ConditionsOperator(rawValue: name.uppercased()) else {
                throw fail("conditions_operator", "must be AND or OR")
            }
            op = parsed
        }
        guard let value = value("conditions") else { return ([], op) }
        guard let items = value.arrayValue else { throw fail("conditions", "must be an array of [tag, operator, operand]") }
        guard items.count <= 100 else { throw fail("conditions", "at most 100 conditions") }
        let operandCount = items.reduce(0) { $0 + ($1.arrayValue?.last?.arrayValue?.count ?? 1) }
        guard operandCount <= 10_000 else { throw fail("conditions", "at most 10000 operand values in all") }
        var result: [TagCondition] = []
        for (index, item) in items.enumerated() {
            do {
                result.append(try TagCondition.parse(item, index: index, tagType: { tagTypes[$0] }, now: now))
            } catch {
                throw ArgumentError("\(path.map { $0 + "." } ?? "")\(error.message)")
            }
        }
        return (result, op)
    }
}
