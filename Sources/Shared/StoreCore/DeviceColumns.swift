import Core

/// The columns of a device row that registrations and attribute updates write, written once for
/// every statement that writes them. Statements number their parameters alike: the application id
/// `1`, the hwid `2`, the attributes `3`…`11` (`attributes`), the time `12`, then a registration's
/// push token `13`, gateway `14` and web keys `15` (p256dh) and `16` (auth)
/// (`values(appID:hwid:_:now:)` lays out `1`…`12`, `values(appID:_:now:)` `1`…`16`).
public enum DeviceColumns {
    /// A device attribute a call may leave out, and its parameter's number.
    package struct Attribute: Sendable {
        package let name: String
        package let parameter: Int
    }

    /// The device type and the attributes after it, in parameter order.
    package static let attributes: [Attribute] = [
        "platform", "language", "timezone_offset", "app_version", "os_version", "device_model", "sdk_version", "user_id",
        "notification_types",
    ].enumerated().map { Attribute(name: $1, parameter: $0 + 3) }

    /// The attributes after the device type, which a registration (that always names the type) keeps when left out.
    package static let optionalAttributes = Array(attributes.dropFirst())

    /// The columns a new device is inserted with, in parameter order (the time fills `created_at`
    /// and `updated_at`).
    package static let inserted = (["app_id", "hwid"] + attributes.map(\.name) + ["created_at", "updated_at"])
        .joined(separator: ", ")

    /// `inserted`, then the push token, gateway and web keys of a registration.
    package static let registered = inserted + ", push_token, gateway, web_p256dh, web_auth"

    /// `name = COALESCE(given, stored)` for each of `attributes`: a value not given keeps the stored one.
    package static func kept(_ attributes: [Attribute], given: (Attribute) -> String, stored: (Attribute) -> String) -> String {
        attributes.map { "\($0.name) = COALESCE(\(given($0)), \(stored($0)))" }.joined(separator: ", ")
    }

    /// Whether any of `attributes` given differs from the stored one: `COALESCE(given, stored)
    /// <differs> stored`, joined with OR. `differs` is the dialect's null-safe inequality.
    package static func changed(_ attributes: [Attribute], given: (Attribute) -> String, stored: (Attribute) -> String,
                                differs: String) -> String {
        attributes.map { "COALESCE(\(given($0)), \(stored($0))) \(differs) \(stored($0))" }.joined(separator: " OR ")
    }

    /// The parameters `1`…`12`: application id, hwid, the attributes (null when not given) and the time.
    /// Public and inlinable, like the others below, so that each backend's statements get them
    /// specialized to its own values: every device write builds them on the database writer, and
    /// unspecialized (as `package` leaves them) they cost a generic metadata lookup per value.
    @inlinable
    public static func values<Value: BoundValue>(appID: Int64, hwid: String, _ a: DeviceAttributes, now: Int64) -> [Value] {
        var values: [Value] = []
        values.reserveCapacity(12)
        append(appID: appID, hwid: hwid, a, now: now, to: &values)
        return values
    }

    /// The parameters `1`…`16` of a registration: `values(appID:hwid:_:now:)`, then its push token,
    /// gateway and web keys (null when not given).
    @inlinable
    public static func values<Value: BoundValue>(appID: Int64, _ r: DeviceRegistration, now: Int64) -> [Value] {
        var values: [Value] = []
        values.reserveCapacity(16)
        append(appID: appID, r, now: now, to: &values)
        return values
    }

    /// Appends the parameters of `values(appID:_:now:)` (a registration's) to `sink`.
    @inlinable
    public static func append<Sink: ParameterSink>(appID: Int64, _ r: DeviceRegistration, now: Int64, to sink: inout Sink) {
        append(appID: appID, hwid: r.hwid, r.attributes, now: now, to: &sink)
        sink.append(.text(r.pushToken))
        sink.append(.optional(r.gateway))
        sink.append(.optional(r.webKeys?.p256dh))
        sink.append(.optional(r.webKeys?.auth))
    }

    /// Appends the parameters of `values(appID:hwid:_:now:)` to `sink`.
    @inlinable
    public static func append<Sink: ParameterSink>(appID: Int64, hwid: String, _ a: DeviceAttributes, now: Int64, to sink: inout Sink) {
        sink.append(.integer(appID))
        sink.append(.text(hwid))
        sink.append(.optional(a.platform))
        sink.append(.optional(a.language))
        sink.append(.optional(a.timezoneOffset))
        sink.append(.optional(a.appVersion))
        sink.append(.optional(a.osVersion))
        sink.append(.optional(a.deviceModel))
        sink.append(.optional(a.sdkVersion))
        sink.append(.optional(a.userID))
        sink.append(.optional(a.notificationTypes))
        sink.append(.integer(now))
    }
}
