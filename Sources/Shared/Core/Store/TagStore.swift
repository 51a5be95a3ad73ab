/// Tags: their definitions per application and their values per device. Every write is committed
/// before the method returns; a method that throws has changed nothing.
public protocol TagStore: Sendable {
    /// setTags: applies all updates or none.
    func setTags(app: String, hwid: String, attributes: DeviceAttributes, updates: [TagUpdate], now: Int64) throws(StoreError)

    /// setTags by user: applies `updates` to every device bound to `userID`, all or none (a value
    /// one device cannot take fails the whole call). Returns how many devices were updated.
    func setUserTags(app: String, userID: String, updates: [TagUpdate], now: Int64) throws(StoreError) -> Int

    /// getTags by hwid, or by user id: then each tag's value is the one of the most recently updated
    /// of the user's devices that has the tag.
    func getTags(app: String, hwid: String?, userID: String?) throws(StoreError) -> [String: TagValue]

    /// getTags by hwid, answered through `answer`: at once on the calling thread, or (a store whose
    /// reads wait for a server) later from the thread that read the tags, so that no thread waits.
    func getTags(app: String, hwid: String, answer: @escaping @Sendable (Result<[String: TagValue], StoreError>) -> Void)

    /// addTag: defines `name` as `type`. Returns the type the tag already had, or nil when it was created.
    func addTag(app: String, name: String, type: TagType, now: Int64) throws(StoreError) -> TagType?

    /// deleteTag: removes the definition and the tag's values from every device of the application.
    /// Returns false when no such tag is defined.
    func deleteTag(app: String, name: String) throws(StoreError) -> Bool

    /// setBadge: the device's badge, also visible as the `badge` tag.
    func setBadge(app: String, hwid: String, attributes: DeviceAttributes, badge: Int64, now: Int64) throws(StoreError)
}

extension TagStore {
    public func getTags(app: String, hwid: String, answer: @escaping @Sendable (Result<[String: TagValue], StoreError>) -> Void) {
        answer(Result { () throws(StoreError) in try getTags(app: app, hwid: hwid, userID: nil) })
    }

    /// The badge is the `badge` tag, written like any other tag.
    public func setBadge(app: String, hwid: String, attributes: DeviceAttributes, badge: Int64, now: Int64) throws(StoreError) {
        try setTags(app: app, hwid: hwid, attributes: attributes,
                    updates: [TagUpdate(name: "badge", operation: .set(.int(badge)))], now: now)
    }
}
