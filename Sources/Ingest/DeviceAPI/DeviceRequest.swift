import Core

/// The `request` object of a Device API call, with typed accessors that name the field on error.
struct DeviceRequest {
    let members: JSONMembers
    /// Where the object sits in the request, for error messages (`tag.` for addTag's `tag`).
    let prefix: String
    /// The object's JSON text as the client sent it, when it stands for `fields` (no object in it
    /// names a member twice): what a report keeps of its call, without encoding `fields` again.
    let source: ArraySlice<UInt8>?

    init(_ members: JSONMembers, prefix: String = "", source: ArraySlice<UInt8>? = nil) {
        self.members = members
        self.prefix = prefix
        self.source = source
    }

    init(_ fields: [String: JSON], prefix: String = "") {
        self.init(JSONMembers(fields), prefix: prefix)
    }

    /// The member `field`, when the object has it.
    subscript(field: String) -> JSON? { members[field] }

    /// The whole object, for what reads it whole.
    var fields: [String: JSON] { members.dictionary }

    /// The object's JSON text: as sent when `source` has it, else `fields` encoded.
    var text: String { source.map { String(decoding: $0, as: UTF8.self) } ?? JSON.object(fields).text }

    /// The application code (`application`).
    func application() throws(ArgumentError) -> String { try requiredString("application", maxLength: 64) }

    /// The device id (`hwid`).
    func hwid() throws(ArgumentError) -> String { try requiredString("hwid", maxLength: 256) }

    func requiredString(_ field: String, maxLength: Int = 4096) throws(ArgumentError) -> String {
        guard let value = members[field], value != .null else { throw ArgumentError("\(prefix)\(field) is required") }
        guard let text = value.lenientString else { throw ArgumentError("\(prefix)\(field) must be a string, found \(value.typeName)") }
        guard !text.isEmpty else { throw ArgumentError("\(prefix)\(field) must not be empty") }
        guard text.utf8.count <= maxLength else { throw ArgumentError("\(prefix)\(field) is longer than \(maxLength) bytes") }
        return text
    }

    func optionalString(_ field: String, maxLength: Int = 4096) throws(ArgumentError) -> String? {
        guard let value = members[field], value != .null else { return nil }
        guard let text = value.lenientString else { throw ArgumentError("\(prefix)\(field) must be a string, found \(value.typeName)") }
        guard text.utf8.count <= maxLength else { throw ArgumentError("\(prefix)\(field) is longer than \(maxLength) bytes") }
        return text.isEmpty ? nil : text
    }

    /// An integer sent as a number or a numeric string (iOS sends `timezone` as a string).
    func optionalInt(_ field: String) throws(ArgumentError) -> Int64? {
        guard let value = members[field], value != .null else { return nil }
        if case .string(let text) = value, text.isEmpty { return nil }
        guard let number = value.lenientInt else { throw ArgumentError("\(prefix)\(field) must be an integer, found \(value.typeName)") }
        return number
    }

    func requiredInt(_ field: String) throws(ArgumentError) -> Int64 {
        guard let number = try optionalInt(field) else { throw ArgumentError("\(prefix)\(field) is required") }
        return number
    }

    func optionalBool(_ field: String) throws(ArgumentError) -> Bool? {
        guard let value = members[field], value != .null else { return nil }
        guard let flag = value.lenientBool else { throw ArgumentError("\(prefix)\(field) must be a boolean, found \(value.typeName)") }
        return flag
    }

    func optionalObject(_ field: String) throws(ArgumentError) -> [String: JSON]? {
        guard let value = members[field], value != .null else { return nil }
        guard let object = value.objectValue else { throw ArgumentError("\(prefix)\(field) must be an object, found \(value.typeName)") }
        return object
    }

    /// `device_type`, checked against Pushwoosh's platform codes.
    func platform() throws(ArgumentError) -> Int? {
        guard let code = try optionalInt("device_type") else { return nil }
        guard Platform.known.contains(Int(code)) else { throw ArgumentError("device_type \(code) is not a known platform code") }
        return Int(code)
    }

    /// The device attributes every SDK call may carry.
    func attributes() throws(ArgumentError) -> DeviceAttributes {
        DeviceAttributes(
            platform: try platform(),
            language: try optionalString("language", maxLength: 32),
            timezoneOffset: try timezone(),
            appVersion: try optionalString("app_version", maxLength: 128),
            osVersion: try optionalString("os_version", maxLength: 128),
            deviceModel: try optionalString("device_model", maxLength: 128),
            sdkVersion: try optionalString("v", maxLength: 64),
            userID: try optionalString("userId", maxLength: 256),
            notificationTypes: try optionalInt("notificationTypes"))
    }

    /// `timezone`: UTC offset in seconds, as an integer (Android) or a string (iOS).
    func timezone() throws(ArgumentError) -> Int64? {
        guard let offset = try optionalInt("timezone") else { return nil }
        guard abs(offset) <= 18 * 3600 else { throw ArgumentError("timezone must be a UTC offset in seconds (±64800)") }
        return offset
    }

    /// `tags`, parsed into updates.
    func tagUpdates(required: Bool) throws(ArgumentError) -> [TagUpdate] {
        guard let tags = try optionalObject("tags") else {
            if required { throw ArgumentError("tags is required") }
            return []
        }
        do {
            return try TagUpdate.parse(tags)
        } catch {
            throw ArgumentError(error.message)
        }
    }
}
