import Foundation
import Core
import HTTPServer

/// The OneSignal helper's two routes. They write the same device records that Pushwoosh campaigns
/// reach: `player_id` is the device's hwid. Success is HTTP 200 with `{"status": 1}`; errors are
/// `{"status": 0, "message": ...}` with a 4xx code.
struct OneSignalRoutes: Sendable {
    let store: any DeviceRegistryStore & TagStore
    let clock: any Clock
    let logger: Logger

    struct Failure: Error {
        let status: Int
        let message: String
    }

    func addDevice(_ request: HTTPRequest) -> HTTPResponse {
        respond {
            let fields = try decode(request)
            let app = try required(fields, "app_id")
            let token = try required(fields, "identifier")
            guard token.utf8.count <= 4096 else { throw Failure(status: 400, message: "identifier is longer than 4096 bytes") }
            let attributes = try attributes(fields)
            let subscription = try notificationTypes(fields)
            let hwid = try store.registerByToken(app: app, pushToken: token, attributes: attributes,
                                                 newHWID: UUID().uuidString.lowercased(), now: clock.now())
            if subscription == -2 {
                try store.setSubscribed(app: app, hwid: hwid, subscribed: false, now: clock.now())
            }
            return ["status": 1, "success": true, "player_id": .string(hwid)]
        }
    }

    func editDevice(_ request: HTTPRequest) -> HTTPResponse {
        respond {
            let fields = try decode(request)
            let app = try required(fields, "app_id")
            let hwid = try required(fields, "player_id")
            let attributes = try attributes(fields)
            let updates = try tags(fields)
            let subscription = try notificationTypes(fields)
            guard try store.device(app: app, hwid: hwid) != nil else {
                throw Failure(status: 404, message: "player_id \(hwid) not found")
            }
            try store.setTags(app: app, hwid: hwid, attributes: attributes, updates: updates, now: clock.now())
            if let subscription {
                try store.setSubscribed(app: app, hwid: hwid, subscribed: subscription != -2, now: clock.now())
            }
            return ["status": 1, "success": true]
        }
    }

    func respond(_ body: () throws -> JSON) -> HTTPResponse {
        do {
            return .json(try body())
        } catch let failure as Failure {
            return .json(["status": 0, "message": .string(failure.message)], status: failure.status)
        } catch {
            switch RequestFailure(error, route: "onesignal", logger: logger) {
            case .unknownApplication(let code): return .json(["status": 0, "message": .string("app_id \(code) not found")], status: 400)
            case .unknownDevice: return .json(["status": 0, "message": "player_id not found"], status: 404)
            case .argument(let message): return .json(["status": 0, "message": .string(message)], status: 400)
            case .accessDenied: return .json(["status": 0, "message": "access denied"], status: 403)
            case .server(let status):
                return HTTPResponse.json(["status": 0, "message": "internal error, please retry"], status: status)
            }
        }
    }

    /// Form fields, or the members of a JSON object body (values as text). A NUL character in any
    /// name or value is refused (400 naming the field).
    func decode(_ request: HTTPRequest) throws -> [String: String] {
        let contentType = request.header("content-type")?.lowercased() ?? ""
        if contentType.hasPrefix("application/json") {
            var holdsNUL = false
            guard let json = try? JSON.parse(request.body, holdsNUL: &holdsNUL), let object = json.objectValue else {
                throw Failure(status: 400, message: "body is not a JSON object")
            }
            if holdsNUL, let nul = json.nulCharacter { throw Failure(status: 400, message: nul.description) }
            var fields: [String: String] = [:]
            for (name, value) in object {
                switch value {
                case .null: continue
                case .object, .array: fields[name] = value.text
                case .bool(let flag): fields[name] = flag ? "1" : "0"
                default: fields[name] = value.lenientString
                }
            }
            return fields
        }
        guard let fields = FormDecoding.decode(request.body) else {
            throw Failure(status: 400, message: "body is not valid application/x-www-form-urlencoded")
        }
        if let nul = NULCharacter.first(in: fields) { throw Failure(status: 400, message: nul.description) }
        return fields
    }

    func required(_ fields: [String: String], _ name: String) throws -> String {
        guard let value = fields[name], !value.isEmpty else { throw Failure(status: 400, message: "\(name) is required") }
        return value
    }

    /// OneSignal `device_type` → Pushwoosh platform.
    func attributes(_ fields: [String: String]) throws -> DeviceAttributes {
        let code = try required(fields, "device_type")
        guard let platform = Platform.fromOneSignal(code) else {
            throw Failure(status: 400, message: "device_type \(code) is not supported (0 iOS, 1 Android, 2 Amazon)")
        }
        var timezone: Int64?
        if let text = fields["timezone"], !text.isEmpty {
            guard let offset = Int64(text), abs(offset) <= 18 * 3600 else {
                throw Failure(status: 400, message: "timezone must be a UTC offset in seconds")
            }
            timezone = offset
        }
        return DeviceAttributes(
            platform: platform, language: fields["language"].flatMap { $0.isEmpty ? nil : $0 }, timezoneOffset: timezone,
            appVersion: fields["game_version"], osVersion: fields["device_os"], deviceModel: fields["device_model"])
    }

    func notificationTypes(_ fields: [String: String]) throws -> Int? {
        guard let text = fields["notification_types"], !text.isEmpty else { return nil }
        guard let value = Int(text), value == 1 || value == -2 else {
            throw Failure(status: 400, message: "notification_types must be 1 (subscribed) or -2 (unsubscribed)")
        }
        return value
    }

    /// `tags`: a JSON-encoded object; empty or missing is fine. An empty string value deletes a tag.
    func tags(_ fields: [String: String]) throws -> [TagUpdate] {
        guard let text = fields["tags"], !text.isEmpty else { return [] }
        var holdsNUL = false
        guard let json = try? JSON.parse(text.utf8, holdsNUL: &holdsNUL), let object = json.objectValue else {
            throw Failure(status: 400, message: "tags must be a JSON object")
        }
        if holdsNUL, let nul = json.nulCharacter(under: "tags") { throw Failure(status: 400, message: nul.description) }
        var cleaned = object
        for (name, value) in object where value == .string("") { cleaned[name] = .null }
        do {
            return try TagUpdate.parse(cleaned)
        } catch {
            throw Failure(status: 400, message: error.message)
        }
    }
}
