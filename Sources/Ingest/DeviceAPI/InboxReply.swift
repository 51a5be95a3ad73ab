import Core

/// getInboxMessages' message objects, in the shape the SDKs parse (protocol reference §2).
enum InboxReply {
    /// One message: `inbox_id` (the message code), `order` (what `last_code` and `inboxStatus`'s
    /// `inbox_code` take), `rt` and `send_date` (unix seconds as strings), `title`, `text`, `image`
    /// when set, `action_type`/`action_params` from the push's rich media or link, `status`, `hash`.
    /// The SDKs read `action_type` as an integer and `action_params` as JSON text.
    static func message(_ entry: InboxEntry, language: String?) -> JSON {
        let spec = entry.spec
        let title = spec.title ?? spec.ios.title ?? spec.android.header
        let text = spec.content.isEmpty ? spec.ios.content ?? spec.android.content ?? [:] : spec.content
        var message: [String: JSON] = [
            "inbox_id": .string(entry.code), "order": .string(String(entry.order)), "rt": .string(String(entry.expiresAt)),
            "send_date": .string(String(entry.sentAt)), "title": .string(title.map { localized($0, language: language) } ?? ""),
            "text": .string(localized(text, language: language)), "status": .int(Int64(entry.status.rawValue)),
            "hash": .string(entry.hash),
        ]
        if let image = spec.inbox?.image { message["image"] = .string(image) }
        (message["action_type"], message["action_params"]) = action(spec)
        return .object(message)
    }

    /// The SDKs' message types (iOS `PWInboxMessageType`, Android `InboxMessageType`).
    enum ActionType: Int64 {
        case plain = 0, richMedia = 1, url = 2, deepLink = 3
    }

    /// Rich media with `{"rm": "<the payload's rm as a JSON string>"}`, URL (http/https) or deep
    /// link (any other scheme) with `{"l": link}`, else plain with `{}`; the parameters as JSON text.
    static func action(_ spec: MessageSpec) -> (JSON, JSON) {
        let (type, parameters): (ActionType, JSON)
        if let rich = spec.richMediaLink {
            (type, parameters) = (.richMedia, ["rm": .string(rich.json.text)])
        } else if let link = spec.link {
            let lowered = link.lowercased()
            let web = lowered.hasPrefix("http://") || lowered.hasPrefix("https://")
            (type, parameters) = (web ? .url : .deepLink, ["l": .string(link)])
        } else {
            (type, parameters) = (.plain, [:])
        }
        return (.int(type.rawValue), .string(parameters.text))
    }
}
