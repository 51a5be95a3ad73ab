import Core

/// The notifications of `startLiveActivity` and `updateLiveActivity`: a `MessageSpec` whose
/// `liveActivity` is set, for iOS devices, sent at once. Its `aps.timestamp` is a placeholder until
/// the store creates the message (`CampaignStore.createMessages`).
extension NotificationParser {
    /// Fields that choose devices, which an update does not take (it goes to the activity's tokens).
    static let targetingFields = ["users", "devices", "conditions", "conditions_operator", "filter", "filter_code"]

    /// A `startLiveActivity` notification: `live_activity` (`content-state`, `attributes-type`,
    /// `attributes`, optional `stale-date`), `live_activity_id`, the alert of devices that cannot
    /// start it (`content`, `title`, optional), and createMessage's targeting.
    func parseLiveActivityStart() throws -> MessageSpec {
        let block = try liveActivityBlock()
        var (spec, activity) = try liveActivity(event: .start, block: block)
        guard let type = try block.string("attributes-type") else { throw block.fail("attributes-type", "is required") }
        guard type.utf8.count <= 256 else { throw block.fail("attributes-type", "is longer than 256 bytes") }
        activity.attributesType = type
        guard let attributes = try block.object("attributes") else {
            throw block.fail("attributes", "is required (an object; {} when the activity has none)")
        }
        activity.attributes = attributes
        activity.staleDate = try block.nonNegative("stale-date")
        if block.value("dismissal-date") != nil { throw block.fail("dismissal-date", "only an end (updateLiveActivity) takes a dismissal-date") }
        spec.content = try text("content") ?? [:]
        spec.title = try text("title")
        if value("filter_code") != nil { throw fail("filter_code", "saved filters are not supported by Herald; send conditions instead") }
        try target(&spec)
        spec.liveActivity = activity
        return try checked(spec)
    }

    /// An `updateLiveActivity` notification: `live_activity` (`event` update or end,
    /// `content-state`, `dismissal-date` on an end, `stale-date` on an update) and `live_activity_id`.
    func parseLiveActivityUpdate() throws -> MessageSpec {
        let event: MessageSpec.LiveActivity.Event
        let block = try liveActivityBlock()
        switch try block.string("event") {
        case "update": event = .update
        case "end": event = .end
        case nil: throw block.fail("event", "is required (update or end)")
        case let other?: throw block.fail("event", "must be update or end, found \"\(other.prefix(32))\"")
        }
        var (spec, activity) = try liveActivity(event: event, block: block)
        if event == .end {
            activity.dismissalDate = try block.nonNegative("dismissal-date")
            if block.value("stale-date") != nil {
                throw block.fail("stale-date", "an ended activity does not go stale; only an update takes it")
            }
        } else {
            activity.staleDate = try block.nonNegative("stale-date")
            if block.value("dismissal-date") != nil { throw block.fail("dismissal-date", "only an end takes a dismissal-date") }
        }
        if let field = Self.targetingFields.first(where: { value($0) != nil }) {
            throw fail(field, "an update goes to every token registered for the activity; updateLiveActivity takes no \(field)")
        }
        spec.liveActivity = activity
        return try checked(spec)
    }

    /// The `live_activity` object, read by a parser of its own so that errors name its fields.
    func liveActivityBlock() throws -> NotificationParser {
        guard let block = try object("live_activity") else { throw fail("live_activity", "is required") }
        return NotificationParser(fields: block, path: (path.map { $0 + "." } ?? "") + "live_activity", tagTypes: tagTypes, now: now)
    }

    /// What both methods share: `live_activity_id`, `content-state` (from `block`), `send_date` (now only),
    /// `ios_ttl` and `priority`; iOS devices only.
    func liveActivity(event: MessageSpec.LiveActivity.Event, block: NotificationParser) throws -> (MessageSpec, MessageSpec.LiveActivity) {
        guard let id = try string("live_activity_id") else { throw fail("live_activity_id", "is required") }
        guard id.utf8.count <= MessageSpec.LiveActivity.maximumIDLength else {
            throw fail("live_activity_id", "is longer than \(MessageSpec.LiveActivity.maximumIDLength) bytes")
        }
        guard let state = try block.object("content-state") else { throw block.fail("content-state", "is required (an object)") }
        var activity = MessageSpec.LiveActivity(id: id, event: event, contentState: state, timestamp: now)
        if let priority = try int("priority") {
            guard MessageSpec.LiveActivity.priorities.contains(Int(priority)) else { throw fail("priority", "must be 5 or 10") }
            activity.priority = Int(priority)
        }
        if let date = try string("send_date"), date.lowercased() != "now" {
            throw fail("send_date", "a Live Activity push goes out at once (its aps.timestamp is when it was accepted); only \"now\" is accepted")
        }
        var spec = MessageSpec(content: [:])
        spec.schedule = MessageSpec.Schedule(sendAt: now, perDeviceTimezone: false)
        spec.platforms = [Platform.iOS]
        spec.ios.ttl = try nonNegative("ios_ttl")
        return (spec, activity)
    }

    /// `spec` once its payload fits APNs' limit.
    func checked(_ spec: MessageSpec) throws -> MessageSpec {
        if let problem = PayloadBuilder.sizeCheck(spec) { throw fail("live_activity", problem) }
        return spec
    }
}
