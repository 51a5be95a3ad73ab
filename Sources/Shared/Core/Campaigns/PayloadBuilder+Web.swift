extension PayloadBuilder {
    /// The longest Web Push payload (plaintext bytes): push services accept 4096-byte bodies, and
    /// RFC 8291's encryption adds 103 bytes (RFC 8291 §4).
    public static let webSizeLimit = 3993

    /// The Web Push payload for one browser, in the shape the Pushwoosh Web SDK's service worker
    /// reads: `body`, `header` (title), `p` (the hash echoed by `pushStat` and
    /// `messageDeliveryEvent`), `i` (icon), `image`, `l` (the URL a click opens), `duration`, and the
    /// JSON text of `u` (custom data), `buttons` (`[{"title", "url"}]`) and `inbox_params`, with
    /// `pw_inbox` for a message kept in inboxes. Root params may override anything but `p`.
    public static func web(_ spec: MessageSpec, hash: String, language: String?, inbox: InboxLink? = nil) -> JSON {
        let web = spec.web
        var root: [String: JSON] = ["p": .string(hash), "body": .string(localized(spec.content, language: language))]
        if let title = text(web?.title ?? spec.title, language) { root["header"] = .string(title) }
        if let icon = nonEmpty(web?.icon) { root["i"] = .string(icon) }
        if let image = nonEmpty(web?.image) { root["image"] = .string(image) }
        if let duration = web?.duration { root["duration"] = .string(String(duration)) }
        if let buttons = web?.buttons, !buttons.isEmpty {
            let list: [JSON] = buttons.map { button in
                var entry: [String: JSON] = ["title": .string(button.title)]
                if let url = nonEmpty(button.url) { entry["url"] = .string(url) }
                return .object(entry)
            }
            root["buttons"] = .string(JSON.array(list).text)
        }
        if let data = customData(spec.data) { root["u"] = .string(data) }
        if let link = nonEmpty(spec.link) { root["l"] = .string(link) }
        if let inbox {
            root["pw_inbox"] = .string(inbox.code)
            root["inbox_params"] = .string(inbox.params.text)
        }
        for (key, value) in web?.rootParams ?? [:] where !protectedKeys.contains(key) { root[key] = value }
        return .object(root)
    }

    /// The RFC 8030 request headers that depend on the message.
    public struct WebHeaders: Sendable, Equatable {
        /// `TTL`: seconds the push service keeps the message for an offline browser.
        public var ttl: Int64
        /// `Urgency`, when the message sets one.
        public var urgency: String?
        /// `Topic`, when the message sets one.
        public var topic: String?

        public init(ttl: Int64, urgency: String?, topic: String?) {
            self.ttl = ttl
            self.urgency = urgency
            self.topic = topic
        }
    }

    /// The headers of `spec`: `TTL` is `web.ttl`, else `defaultTTL`.
    public static func webHeaders(_ spec: MessageSpec, defaultTTL: Int64) -> WebHeaders {
        WebHeaders(ttl: max(0, spec.web?.ttl ?? defaultTTL), urgency: nonEmpty(spec.web?.urgency), topic: nonEmpty(spec.web?.topic))
    }

    /// Why `spec` cannot go to Web Push browsers because a payload is too large, or nil when every
    /// language variant fits within `webSizeLimit` bytes.
    public static func webSizeCheck(_ spec: MessageSpec) -> String? {
        let hash = String(repeating: "0", count: 64)
        let inbox = InboxLink(spec, code: "0000-00000000-00000000", sentAt: 4_000_000_000)
        var languages: Set<String> = []
        for case let text? in [spec.content, spec.title, spec.web?.title] { languages.formUnion(text.keys) }
        let variants: [String?] = languages.isEmpty ? [nil] : languages.sorted().map(Optional.some)
        for language in variants {
            let size = web(spec, hash: hash, language: language, inbox: inbox).encoded().count
            if size > webSizeLimit {
                let suffix = language.map { " (language \"\($0)\")" } ?? ""
                return "Web Push payload of \(size) bytes exceeds the limit of \(webSizeLimit) bytes\(suffix)"
            }
        }
        return nil
    }
}
