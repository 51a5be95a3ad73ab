extension PayloadBuilder {
    /// The longest time Huawei Push Kit keeps a message for an offline device (15 days).
    public static let huaweiMaxTTL: Int64 = 1_296_000

    /// The Huawei Push Kit request body for one device (`POST /v1/<app id>/messages:send`): a data
    /// message whose `data` is the JSON text of the map the FCM path sends, which the Pushwoosh
    /// Android SDK's Huawei module parses the same way (it recognises its pushes by `pw_msg`).
    ///
    /// `android.urgency` is HIGH only when the message asks for `android_priority` 1 or 2: Push Kit
    /// accepts high-urgency data messages only from apps granted that right, and refuses the others
    /// with 80300011. `android.ttl` is `android_gcm_ttl`, capped at Push Kit's 15 days.
    public static func huawei(_ spec: MessageSpec, hash: String, token: String, language: String?,
                              inbox: InboxLink? = nil) -> JSON {
        let android = spec.android
        let data = androidData(spec, hash: hash, language: language, inbox: inbox)
        var config: [String: JSON] = ["urgency": (android.priority ?? 0) >= 1 ? "HIGH" : "NORMAL"]
        if let ttl = android.ttl { config["ttl"] = .string("\(min(huaweiMaxTTL, max(0, ttl)))s") }
        let message: [String: JSON] = [
            "data": .string(JSON.object(data.mapValues { .string($0) }).text),
            "token": [.string(token)],
            "android": .object(config),
        ]
        return ["validate_only": false, "message": .object(message)]
    }
}
