/// The tables every backend creates, column by column. A backend's migrations create them in its
/// dialect (`SchemaDialect`); the backends number their migrations apart, so each lists which
/// tables (and which later columns) each of its migrations brings. Each shape here is part of the
/// migrations that shipped it: a shape is never edited; a new column is a new list of columns that
/// a new migration adds (`SchemaDialect.add(_:to:)`), as `webPushKeys` is.
package enum Tables {
    private typealias C = ColumnShape

    package static let applications = TableShape("applications", [
        C("id", .rowID), C("code", .text, "NOT NULL UNIQUE"), C("name", .text, "NOT NULL"),
    ])

    package static let devices = TableShape("devices", [
        C("id", .rowID),
        C("app_id", .int64, "NOT NULL", references: "applications(id)"),
        C("hwid", .text, "NOT NULL"),
        C("platform", .int32, "NOT NULL"),
        C("push_token", .text),
        C("gateway", .text),
        C("language", .text),
        C("timezone_offset", .int64),
        C("app_version", .text),
        C("os_version", .text),
        C("device_model", .text),
        C("sdk_version", .text),
        C("user_id", .text),
        C("subscribed", .bool(default: true), "NOT NULL"),
        C("notification_types", .int64),
        C("badge", .int64, "NOT NULL DEFAULT 0"),
        C("created_at", .int64, "NOT NULL"),
        C("updated_at", .int64, "NOT NULL"),
        C("last_open_at", .int64),
        C("token_invalid_reason", .text),
    ], unique: "app_id, hwid", busy: true)

    /// A browser's Web Push subscription keys, as registerDevice gives them (base64): the user
    /// agent's P-256 public key and the authentication secret. NULL for other devices.
    package static let webPushKeys = [C("web_p256dh", .text), C("web_auth", .text)]

    package static let users = TableShape("users", [
        C("app_id", .int64, "NOT NULL", references: "applications(id)"),
        C("user_id", .text, "NOT NULL"),
        C("created_at", .int64, "NOT NULL"),
        C("updated_at", .int64, "NOT NULL"),
    ], primaryKey: "app_id, user_id")

    package static let tagDefinitions = TableShape("tag_definitions", [
        C("app_id", .int64, "NOT NULL", references: "applications(id)"),
        C("name", .text, "NOT NULL"),
        C("type", .int32, "NOT NULL"),
        C("created_at", .int64, "NOT NULL"),
    ], primaryKey: "app_id, name")

    /// One row per (device, tag), keyed so that targeting, which walks devices in id order, finds
    /// a device's tag with one primary-key lookup. `num` holds integers, decimals, booleans (0/1),
    /// dates (unix seconds) and versions (encoded to sort numerically); `str` holds strings,
    /// versions as written, and lists as a JSON array (their items are also in device_tag_items).
    package static let deviceTags = TableShape("device_tags", [
        C("device_id", .int64, "NOT NULL", references: "devices(id) ON DELETE CASCADE"),
        C("name", .text, "NOT NULL"),
        C("app_id", .int64, "NOT NULL"),
        C("type", .int32, "NOT NULL"),
        C("num", .tagNumber),
        C("str", .text),
    ], primaryKey: "device_id, name", busy: true)

    /// One row per item of a list tag, indexed by item for targeting. Its reference to the device
    /// is in the table migration 1 created; SQLite's migration 20 drops it, and PostgreSQL, which
    /// leaves out the busy tables' references, never had it.
    package static let deviceTagItems = TableShape("device_tag_items", [
        C("device_id", .int64, "NOT NULL", references: "devices(id) ON DELETE CASCADE"),
        C("name", .text, "NOT NULL"),
        C("item", .text, "NOT NULL"),
        C("app_id", .int64, "NOT NULL"),
    ], primaryKey: "device_id, name, item", busy: true)

    /// What the SDKs report (postEvent, pushStat, messageDeliveryEvent), kept as received until the
    /// analytics pipeline turns them into counts; `processed_at` marks that.
    package static let reports = TableShape("reports", [
        C("id", .rowID),
        C("app_id", .int64, "NOT NULL", references: "applications(id)"),
        C("kind", .text, "NOT NULL"),
        C("hwid", .text, "NOT NULL"),
        C("user_id", .text),
        C("platform", .int32),
        C("name", .text),
        C("hash", .text),
        C("body", .text, "NOT NULL"),
        C("timestamp_utc", .int64),
        C("timestamp_current", .int64),
        C("received_at", .int64, "NOT NULL"),
        C("processed_at", .int64),
    ], busy: true)

    /// The outbox: a send request is committed here before it is acknowledged.
    package static let messages = TableShape("messages", [
        C("id", .rowID),
        C("code", .text, "NOT NULL UNIQUE"),
        C("app_id", .int64, "NOT NULL", references: "applications(id)"),
        C("transaction_id", .text),
        C("status", .text, "NOT NULL"),
        C("request", .text, "NOT NULL"),
        C("send_at", .int64, "NOT NULL"),
        C("created_at", .int64, "NOT NULL"),
        C("updated_at", .int64, "NOT NULL"),
    ])

    /// A message's inbox: `inbox_seconds` (how long each recipient keeps it after its push; NULL
    /// with a fixed date) and `inbox_until` (that date; with days 2^63-1 while the message sends,
    /// then a bound past its last copy's expiry; NULL once its inbox is over).
    package static let messageInbox = [C("inbox_until", .int64), C("inbox_seconds", .int64)]

    /// A message's devices in shards of consecutive ids, each leased to one worker at a time.
    package static let messageShards = TableShape("message_shards", [
        C("id", .rowID),
        C("message_id", .int64, "NOT NULL", references: "messages(id)"),
        C("first_device", .int64, "NOT NULL"),
        C("last_device", .int64, "NOT NULL"),
        C("by_timezone", .bool(default: false), "NOT NULL"),
        C("timezone_offset", .int64),
        C("due_at", .int64, "NOT NULL"),
        C("status", .text, "NOT NULL"),
        C("lease_owner", .text),
        C("lease_until", .int64),
        C("attempts", .int32, "NOT NULL DEFAULT 0"),
        C("targeted", .int64, "NOT NULL DEFAULT 0"),
        C("sent", .int64, "NOT NULL DEFAULT 0"),
        C("failed", .int64, "NOT NULL DEFAULT 0"),
        C("throttled", .int64, "NOT NULL DEFAULT 0"),
    ])

    /// A shard's pushes waiting for a retry, those whose outcome was unknown, and the highest
    /// device id handed to a provider.
    package static let shardRetries = [
        C("retrying", .int64, "NOT NULL DEFAULT 0"),
        C("ambiguous", .int64, "NOT NULL DEFAULT 0"),
        C("attempted_through", .int64),
    ]

    package static let deliveries = TableShape("deliveries", [
        C("message_id", .int64, "NOT NULL"),
        C("device_id", .int64, "NOT NULL"),
        C("status", .text, "NOT NULL"),
        C("reason", .text),
        C("created_at", .int64, "NOT NULL"),
    ], primaryKey: "message_id, device_id")

    package static let messageErrors = TableShape("message_errors", [
        C("message_id", .int64, "NOT NULL"), C("reason", .text, "NOT NULL"), C("count", .int64, "NOT NULL"),
    ], primaryKey: "message_id, reason")

    /// A push that failed for a transient reason keeps its `deliveries` row with status 'retrying'
    /// (so that no pass targets the device again) and waits here for its next attempt; `sending`
    /// marks retries on the network, `ambiguous` counts attempts whose outcome was unknown.
    package static let deliveryRetries = TableShape("delivery_retries", [
        C("message_id", .int64, "NOT NULL"),
        C("device_id", .int64, "NOT NULL"),
        C("shard_id", .int64, "NOT NULL"),
        C("attempts", .int32, "NOT NULL"),
        C("ambiguous", .int32, "NOT NULL DEFAULT 0"),
        C("sending", .bool(default: false), "NOT NULL"),
        C("next_at", .int64, "NOT NULL"),
        C("expires_at", .int64, "NOT NULL"),
        C("reason", .text, "NOT NULL"),
    ], primaryKey: "message_id, device_id")

    /// The analytics rollups workers write, per UTC day: each event's count and a `DeviceSketch` of
    /// its devices; a sketch of the devices that sent any event; screens, sessions and purchases;
    /// and delivery and open reports matched to their message by the payload hash, once per device.
    package static let rollups = [
        TableShape("event_days", [
            C("app_id", .int64, "NOT NULL"), C("day", .int64, "NOT NULL"), C("name", .text, "NOT NULL"),
            C("count", .int64, "NOT NULL"), C("devices", .bytes, "NOT NULL"),
        ], primaryKey: "app_id, day, name"),
        TableShape("active_days", [
            C("app_id", .int64, "NOT NULL"), C("day", .int64, "NOT NULL"), C("devices", .bytes, "NOT NULL"),
        ], primaryKey: "app_id, day"),
        TableShape("screen_days", [
            C("app_id", .int64, "NOT NULL"), C("day", .int64, "NOT NULL"), C("screen", .text, "NOT NULL"), C("count", .int64, "NOT NULL"),
        ], primaryKey: "app_id, day, screen"),
        TableShape("session_days", [
            C("app_id", .int64, "NOT NULL"), C("day", .int64, "NOT NULL"), C("sessions", .int64, "NOT NULL"),
            C("duration_sum", .double, "NOT NULL"), C("idle_count", .int64, "NOT NULL"), C("idle_sum", .double, "NOT NULL"),
        ], primaryKey: "app_id, day"),
        TableShape("purchase_days", [
            C("app_id", .int64, "NOT NULL"), C("day", .int64, "NOT NULL"), C("currency", .text, "NOT NULL"),
            C("count", .int64, "NOT NULL"), C("amount", .double, "NOT NULL"),
        ], primaryKey: "app_id, day, currency"),
        TableShape("message_reports", [
            C("message_id", .int64, "NOT NULL"), C("kind", .text, "NOT NULL"), C("device_id", .int64, "NOT NULL"),
        ], primaryKey: "message_id, kind, device_id"),
    ]

    /// Which ingest dispatches: several may serve one database, one dispatches at a time.
    package static let dispatcherLease = TableShape("dispatcher_lease", [
        C("id", .int32, "PRIMARY KEY CHECK (id = 1)"), C("holder", .text, "NOT NULL"), C("until", .int64, "NOT NULL"),
    ])

    /// Transaction ids deduplicate for `NewMessage.transactionWindow` only: one row per (app, id)
    /// holds the code of the message it last created and when; a reuse after the window takes the
    /// row over.
    package static let messageTransactions = TableShape("message_transactions", [
        C("app_id", .int64, "NOT NULL"),
        C("transaction_id", .text, "NOT NULL"),
        C("code", .text, "NOT NULL"),
        C("created_at", .int64, "NOT NULL"),
    ], primaryKey: "app_id, transaction_id")

    /// Rich media pages: the uploaded zip itself, so that a backup or another host has it too;
    /// `actions` counts the SDKs' richMediaAction reports.
    package static let richMediaPages = TableShape("rich_media_pages", [
        C("id", .rowID),
        C("app_id", .int64, "NOT NULL", references: "applications(id)"),
        C("code", .text, "NOT NULL"),
        C("sha256", .text, "NOT NULL"),
        C("size", .int64, "NOT NULL"),
        C("version", .int64, "NOT NULL"),
        C("zip", .bytes, "NOT NULL"),
        C("actions", .int64, "NOT NULL DEFAULT 0"),
        C("created_at", .int64, "NOT NULL"),
        C("updated_at", .int64, "NOT NULL"),
    ], unique: "app_id, code")

    /// In-apps that show a rich media page; `shown` and `actions` count the SDKs'
    /// triggerInAppAction and richMediaAction reports.
    package static let inApps = TableShape("in_apps", [
        C("id", .rowID),
        C("app_id", .int64, "NOT NULL", references: "applications(id)"),
        C("code", .text, "NOT NULL"),
        C("page_id", .int64, "NOT NULL", references: "rich_media_pages(id)"),
        C("layout", .text, "NOT NULL"),
        C("close_button_type", .int64, "NOT NULL"),
        C("priority", .int64, "NOT NULL"),
        C("required", .int32, "NOT NULL"),
        C("shown", .int64, "NOT NULL DEFAULT 0"),
        C("actions", .int64, "NOT NULL DEFAULT 0"),
        C("created_at", .int64, "NOT NULL"),
        C("updated_at", .int64, "NOT NULL"),
    ], unique: "app_id, code")

    /// The events that trigger an in-app; `conditions` is a JSON array of [attribute, operator, operand].
    package static let inAppTriggers = TableShape("in_app_triggers", [
        C("in_app_id", .int64, "NOT NULL", references: "in_apps(id)"),
        C("position", .int32, "NOT NULL"),
        C("app_id", .int64, "NOT NULL"),
        C("event", .text, "NOT NULL"),
        C("conditions", .text, "NOT NULL"),
    ], primaryKey: "in_app_id, position")

    /// bulkSetTags jobs. `devices` holds the request's entries (JSON) until the job completes;
    /// `processed` entries are applied, in order, each chunk in the transaction that advances it.
    package static let bulkTagJobs = TableShape("bulk_tag_jobs", [
        C("id", .text, "PRIMARY KEY"),
        C("app_id", .int64, "NOT NULL", references: "applications(id)"),
        C("status", .text, "NOT NULL"),
        C("create_missing", .bool(), "NOT NULL"),
        C("devices", .text, "NOT NULL"),
        C("total", .int64, "NOT NULL"),
        C("processed", .int64, "NOT NULL DEFAULT 0"),
        C("failed", .int64, "NOT NULL DEFAULT 0"),
        C("failure", .text),
        C("created_at", .int64, "NOT NULL"),
        C("updated_at", .int64, "NOT NULL"),
    ])

    /// One row per bulkSetTags entry that could not be applied.
    package static let bulkTagErrors = TableShape("bulk_tag_errors", [
        C("job_id", .text, "NOT NULL"),
        C("position", .int64, "NOT NULL"),
        C("field", .text, "NOT NULL"),
        C("value", .text, "NOT NULL"),
        C("message", .text, "NOT NULL"),
    ], primaryKey: "job_id, position")

    /// One copy of an inbox message per device its push was sent to, with the SDK's status
    /// (1 delivered, 2 read, 3 opened, 4 deleted) and its expiry; replaced by `inboxStatuses`.
    package static let inboxEntries = TableShape("inbox_entries", [
        C("device_id", .int64, "NOT NULL"),
        C("message_id", .int64, "NOT NULL"),
        C("status", .int32, "NOT NULL"),
        C("sent_at", .int64, "NOT NULL"),
        C("expires_at", .int64, "NOT NULL"),
    ], primaryKey: "device_id, message_id")

    /// The opt-in history (the push primer's analytics): one row per change of a device's
    /// permission state, the first when the device is inserted. Triggers write the changes of
    /// existing devices on both backends, and PostgreSQL's the first rows too; SQLite's store writes
    /// those itself (`SQLiteDeviceStore.recordNew`).
    package static let permissionChanges = TableShape("permission_changes", [
        C("id", .rowID),
        C("app_id", .int64, "NOT NULL"),
        C("device_id", .int64, "NOT NULL"),
        C("at", .int64, "NOT NULL"),
        C("app_version", .text),
        C("opted_in", .bool(), "NOT NULL"),
        C("registered", .bool(), "NOT NULL"),
    ])

    /// Live Activity tokens (iOS), one per device and activity; `activity_id` NULL is the device's
    /// push-to-start token. `active` turns false when the activity ends; `last_timestamp` is the
    /// `aps.timestamp` last sent through the token (APNs drops pushes not newer than it).
    package static let liveActivityTokens = TableShape("live_activity_tokens", [
        C("id", .rowID),
        C("app_id", .int64, "NOT NULL"),
        C("device_id", .int64, "NOT NULL"),
        C("activity_id", .text),
        C("token", .text, "NOT NULL"),
        C("active", .bool(), "NOT NULL"),
        C("last_timestamp", .int64),
        C("updated_at", .int64, "NOT NULL"),
    ])

    /// Live Activities started or updated through the Remote API: the last `aps.timestamp` given to
    /// the activity (the next is newer) and when an end was accepted (NULL: running).
    package static let liveActivities = TableShape("live_activities", [
        C("app_id", .int64, "NOT NULL"),
        C("activity_id", .text, "NOT NULL"),
        C("last_timestamp", .int64, "NOT NULL"),
        C("ended_at", .int64),
    ], primaryKey: "app_id, activity_id")

    /// The SDK's inbox status changes (2 read, 3 opened, 4 deleted); a message's inbox is otherwise
    /// derived from its delivery rows.
    package static let inboxStatuses = TableShape("inbox_statuses", [
        C("message_id", .int64, "NOT NULL"), C("device_id", .int64, "NOT NULL"), C("status", .int32, "NOT NULL"),
    ], primaryKey: "message_id, device_id")
}
