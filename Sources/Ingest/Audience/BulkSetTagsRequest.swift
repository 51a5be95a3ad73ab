import Core

/// The body of `POST /api/v2/audience/bulkSetTags` (no `request` wrapper):
/// `{"application", "auth", "create_missing_tags", "devices": [{"hwid" | "user_id" | "push_token",
/// "list_operator", "tags"}]}`, validated whole before anything is stored.
struct BulkSetTagsRequest {
    static let maximumDevices = 1_000_000

    let fields: DeviceRequest
    let createMissingTags: Bool
    /// The `devices` array as received, stored with the job and read back by `entries(_:)`.
    let devices: [JSON]
    let entries: [BulkTagEntry]

    init(_ body: [String: JSON]) throws(ArgumentError) {
        fields = DeviceRequest(body)
        createMissingTags = try fields.optionalBool("create_missing_tags") ?? false
        guard let value = body["devices"], value != .null else { throw ArgumentError("devices is required") }
        guard let devices = value.arrayValue, !devices.isEmpty else { throw ArgumentError("devices must be a non-empty array") }
        guard devices.count <= Self.maximumDevices else {
            throw ArgumentError("devices has \(devices.count) entries; at most \(Self.maximumDevices) per request")
        }
        self.devices = devices
        entries = try Self.entries(devices)
    }

    /// Each entry of `devices`; errors name the entry (`devices[3].list_operator: ...`).
    static func entries(_ devices: [JSON]) throws(ArgumentError) -> [BulkTagEntry] {
        var entries: [BulkTagEntry] = []
        entries.reserveCapacity(devices.count)
        for (index, item) in devices.enumerated() {
            let path = "devices[\(index)]"
            guard let fields = item.objectValue else { throw ArgumentError("\(path) must be an object") }
            let entry = DeviceRequest(fields, prefix: "\(path).")
            let references: [BulkTagEntry.Device] = [
                try entry.optionalString("hwid", maxLength: 256).map(BulkTagEntry.Device.hwid),
                try entry.optionalString("user_id", maxLength: 256).map(BulkTagEntry.Device.userID),
                try entry.optionalString("push_token", maxLength: 4096).map(BulkTagEntry.Device.pushToken),
            ].compactMap { $0 }
            guard references.count == 1, let device = references.first else {
                throw ArgumentError("\(path) needs exactly one of hwid, user_id and push_token")
            }
            let listOperator = try entry.optionalString("list_operator", maxLength: 16)?.lowercased() ?? "set"
            guard ["set", "append", "remove"].contains(listOperator) else {
                throw ArgumentError("\(path).list_operator must be \"set\", \"append\" or \"remove\"")
            }
            guard let tags = try entry.optionalObject("tags") else { throw ArgumentError("\(path).tags is required") }
            var updates: [TagUpdate]
            do {
                updates = try TagUpdate.parse(tags, field: "\(path).tags")
            } catch {
                throw ArgumentError(error.message)
            }
            if listOperator != "set" {
                // The operator applies to the list values; other values are set as given.
                updates = try updates.map { update throws(ArgumentError) -> TagUpdate in
                    guard case .set(.array(let values)) = update.operation else { return update }
                    guard let items = values.mapAll(\.lenientString) else {
                        throw ArgumentError("\(path).tags.\(update.name): a list holds strings")
                    }
                    return TagUpdate(name: update.name, operation: listOperator == "append" ? .append(items) : .remove(items))
                }
            }
            entries.append(BulkTagEntry(device: device, updates: updates))
        }
        return entries
    }
}
