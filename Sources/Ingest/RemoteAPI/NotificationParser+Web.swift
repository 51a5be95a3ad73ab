import Core

extension NotificationParser {
    /// The Web Push options: Pushwoosh's `chrome_*` fields (they apply to every Web Push browser)
    /// and Herald's `web_ttl`, `web_urgency` and `web_topic`. Nil when the notification sets none.
    func web() throws -> MessageSpec.WebOptions? {
        var web = MessageSpec.WebOptions()
        web.title = try text("chrome_title")
        web.icon = try string("chrome_icon")
        web.image = try string("chrome_image")
        if let duration = try nonNegative("chrome_duration") {
            guard duration <= 3600 else { throw fail("chrome_duration", "must be between 0 and 3600 seconds") }
            web.duration = Int(duration)
        }
        var buttons: [MessageSpec.WebOptions.Button] = []
        for number in 1...2 {
            let url = try string("chrome_button_url\(number)")
            guard let title = try string("chrome_button_text\(number)") else {
                if url != nil { throw fail("chrome_button_url\(number)", "needs chrome_button_text\(number)") }
                continue
            }
            buttons.append(.init(title: title, url: url))
        }
        web.buttons = buttons.isEmpty ? nil : buttons
        let ttl = try nonNegative("web_ttl"), gcmTTL = try nonNegative("chrome_gcm_ttl")
        if ttl != nil && gcmTTL != nil && ttl != gcmTTL { throw fail("web_ttl", "differs from chrome_gcm_ttl; give one of them") }
        web.ttl = ttl ?? gcmTTL
        if let urgency = try string("web_urgency") {
            let urgencies = MessageSpec.WebOptions.urgencies
            guard urgencies.contains(urgency) else { throw fail("web_urgency", "must be \(urgencies.joined(separator: ", "))") }
            web.urgency = urgency
        }
        if let topic = try string("web_topic") {
            guard MessageSpec.WebOptions.isValidTopic(topic) else {
                throw fail("web_topic", "must be at most \(MessageSpec.WebOptions.topicLength) characters of A-Z a-z 0-9 - _")
            }
            web.topic = topic
        }
        web.rootParams = try object("chrome_root_params")
        return web == MessageSpec.WebOptions() ? nil : web
    }
}
