import Core

/// `startLiveActivity` and `updateLiveActivity`: one Live Activity message per notification,
/// created like createMessage's (the outbox, then the dispatcher) and answered the same way. The
/// store gives each its `aps.timestamp` and refuses updates of unknown or ended activities, in the
/// transaction that stores the messages, so a refused call stores none of them.
extension RemoteAPI {
    func liveActivity(app: AppConfiguration, request: DeviceRequest, starting: Bool) throws -> JSON {
        let items = try notifications(request)
        let now = clock.now()
        let tagTypes = starting ? try campaigns.tagTypes(app: app.code) : [:]
        let messages = try items.map { path, fields in
            let parser = NotificationParser(fields: fields, path: path, tagTypes: tagTypes, now: now)
            return NewMessage(spec: try starting ? parser.parseLiveActivityStart() : parser.parseLiveActivityUpdate(),
                              transactionID: nil, path: path)
        }
        return try create(messages, app: app, now: now)
    }
}
