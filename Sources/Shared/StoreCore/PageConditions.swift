import Core

/// What a campaign page asks of a device whatever the backend, as SQL over `devices d`.
extension MessageSpec {
    /// The deliverable platforms the message goes to: those it names, or all.
    package var pagePlatforms: [Int] { Platform.deliverable.filter { platforms?.contains($0) ?? true } }

    /// ` AND` the condition that device `d` is opted in (its `notificationTypes` absent or not 0),
    /// unless the message is silent on the device's platform.
    package var optedInCondition: String {
        let silent = silentPlatforms.map(String.init).joined(separator: ",")
        return silent.isEmpty ? " AND coalesce(d.notification_types, 1) <> 0"
            : " AND (coalesce(d.notification_types, 1) <> 0 OR d.platform IN (\(silent)))"
    }
}
