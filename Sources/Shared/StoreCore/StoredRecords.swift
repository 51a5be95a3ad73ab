import Core

// How a row becomes a record, for the queries both backends run with the same columns.

extension Target {
    /// The columns of device `d` that `init(deviceID:row:from:)` reads, with `token` as the push token.
    package static func columns(token: String) -> String {
        "d.hwid, d.platform, \(token), d.gateway, d.language, d.badge, d.web_p256dh, d.web_auth"
    }

    /// How many columns `columns(token:)` names.
    package static let columnCount: Int32 = 8

    /// The target of device `deviceID` whose hwid, platform, token, gateway, language, badge and web
    /// keys are `row`'s columns `first`, `first + 1`, … (`columns(token:)`). Keys are read only as a pair.
    package init(deviceID: Int64, row: some StoredRow, from first: Int32) {
        let webKeys = row.optionalText(first + 6).flatMap { p256dh in
            row.optionalText(first + 7).map { WebPushKeys(p256dh: p256dh, auth: $0) }
        }
        self.init(deviceID: deviceID, hwid: row.text(first), platform: Int(row.int(first + 1)), pushToken: row.text(first + 2),
                  gateway: row.optionalText(first + 3), language: row.optionalText(first + 4), badge: row.int(first + 5),
                  webKeys: webKeys)
    }

    /// A row of a page of targets: the device id, then the columns of `init(deviceID:row:from:)`.
    package init(row: some StoredRow) {
        self.init(deviceID: row.int(0), row: row, from: 1)
    }
}

extension PendingRetry {
    /// A row of the due retries: device id, attempts, ambiguous attempts, expiry, reason, whether
    /// the device can still be sent to, then its target's columns (see `Target`).
    package init(row: some StoredRow) {
        self.init(target: row.bool(5) ? Target(deviceID: row.int(0), row: row, from: 6) : nil, deviceID: row.int(0),
                  attempts: Int(row.int(1)), ambiguous: Int(row.int(2)), expiresAt: row.int(3), reason: row.text(4))
    }
}

extension DeviceRecord {
    /// The columns of the devices table that `init(row:)` reads, in its order.
    package static let columns = """
        hwid, platform, push_token, gateway, language, timezone_offset, app_version, os_version, device_model, sdk_version, \
        user_id, subscribed, badge, last_open_at
        """

    package init(row: some StoredRow) {
        self.init(hwid: row.text(0), platform: Int(row.int(1)), pushToken: row.optionalText(2), gateway: row.optionalText(3),
                  language: row.optionalText(4), timezoneOffset: row.optionalInt(5), appVersion: row.optionalText(6),
                  osVersion: row.optionalText(7), deviceModel: row.optionalText(8), sdkVersion: row.optionalText(9),
                  userID: row.optionalText(10), subscribed: row.bool(11), badge: row.int(12), lastOpenAt: row.optionalInt(13))
    }
}

extension SDKReport {
    /// The columns of the reports table that `init(app:row:)` reads, in its order.
    package static let columns = "kind, hwid, user_id, platform, name, hash, body, timestamp_utc, timestamp_current"

    /// A report of application `app`, its `bodyText` the text as stored; a body that no longer
    /// parses reads as null.
    package init(app: String, row: some StoredRow) {
        let text = row.text(6)
        self.init(kind: SDKReport.Kind(rawValue: row.text(0)) ?? .event, app: app, hwid: row.text(1), userID: row.optionalText(2),
                  platform: row.optionalInt(3).map { Int($0) }, name: row.optionalText(4), hash: row.optionalText(5),
                  bodyText: (try? JSON.parse(text)) == nil ? JSON.null.text : text,
                  timestampUTC: row.optionalInt(7), timestampCurrent: row.optionalInt(8))
    }
}

extension NewMessage {
    /// Each message's request as the messages table stores it; a message that cannot be encoded is invalid.
    package static func storedTexts(_ messages: [NewMessage]) throws(StoreError) -> [String] {
        var encoded: [String] = []
        for message in messages {
            do {
                encoded.append(try message.spec.storedText())
            } catch {
                throw .invalid("cannot encode the message: \(error)")
            }
        }
        return encoded
    }
}
