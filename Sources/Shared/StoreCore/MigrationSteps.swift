/// The migration steps whose statements are the same in every dialect but for the types of their
/// columns. Each backend's migration list names them where they fall in its numbering.
extension SchemaDialect {
    /// Transaction ids deduplicate for `NewMessage.transactionWindow` only: one row per (app, id)
    /// holds the code of the message it last created and when; a reuse after the window takes the
    /// row over. Replaces the unique index that kept an id forever.
    package static var transactionWindowStep: String {
        """
        DROP INDEX messages_by_transaction;
        \(create(Tables.messageTransactions))
        INSERT INTO message_transactions (app_id, transaction_id, code, created_at)
            SELECT app_id, transaction_id, code, created_at FROM messages WHERE transaction_id IS NOT NULL;
        """
    }

    /// Rich media pages, the in-apps that show them, and the events that trigger in-apps.
    package static var inAppsStep: String {
        """
        \(create(Tables.richMediaPages))
        \(create(Tables.inApps))
        CREATE INDEX in_apps_by_page ON in_apps (page_id);
        \(create(Tables.inAppTriggers))
        CREATE INDEX in_app_triggers_by_event ON in_app_triggers (app_id, event);
        """
    }

    /// bulkSetTags jobs, and one error row per entry that could not be applied.
    package static var bulkTagJobsStep: String {
        """
        \(create(Tables.bulkTagJobs))
        CREATE INDEX bulk_tag_jobs_unfinished ON bulk_tag_jobs (created_at) WHERE status IN ('Pending', 'Processing');
        \(create(Tables.bulkTagErrors))
        """
    }

    /// The message inbox as one copy per recipient (replaced by `inbox_statuses` later).
    package static var inboxEntriesStep: String {
        """
        \(create(Tables.inboxEntries))
        CREATE INDEX inbox_entries_by_expiry ON inbox_entries (expires_at);
        """
    }

    /// Retention finds transaction ids past their window by age (`pruneMessageTransactions`).
    package static var transactionsByAgeStep: String {
        "CREATE INDEX message_transactions_by_age ON message_transactions (created_at);"
    }

    /// Live Activities started or updated through the Remote API.
    package static var liveActivitiesStep: String { create(Tables.liveActivities) }

    /// A browser's Web Push subscription keys.
    package static var webPushKeysStep: String { add(Tables.webPushKeys, to: Tables.devices) }
}
