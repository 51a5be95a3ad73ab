import Core
import Foundation
import SDKClient

/// A running edge's admin API, found through its `edge.json`.
struct EdgeAdmin {
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    let client: HTTPClient

    init(directory: String) throws(Problem) {
        let settings = try Self.settings(directory: directory)
        let path = directory + "/edge.json"
        guard let text = settings["admin_url"]?.stringValue, let url = try? TargetURL(parsing: text), !url.isTLS else {
            throw Problem(description: "\(path) has no http admin_url")
        }
        client = HTTPClient(host: url.host, port: url.port)
    }

    /// The edge's `edge.json` in `directory`.
    static func settings(directory: String) throws(Problem) -> JSON {
        guard let data = FileManager.default.contents(atPath: directory + "/edge.json"), let settings = try? JSON.parse(data) else {
            throw Problem(description: "no edge.json in \(directory) (start herald-load edge --dir \(directory) first)")
        }
        return settings
    }

    /// The entries of Herald's app `code` that deliver to the edge of `directory`:
    /// `{"code", "apns": {…}, "fcm": {…}, "huawei": {…}, "web": {…}}`, for both APNs gateways and with
    /// the edge's CA; `web.allow_private_endpoints` lets Herald post to the edge's loopback endpoints.
    static func appConfig(code: String, directory: String) throws(Problem) -> JSON {
        let settings = try settings(directory: directory)
        var values: [String: JSON] = [:]
        for key in ["team_id", "key_id", "key_path", "topic", "apns_url", "fcm_url", "ca_file", "service_account_path",
                    "huawei_app_id", "huawei_client_secret_file", "huawei_token_url", "huawei_endpoint", "vapid_private_key_file",
                    "web_subject"] {
            guard let value = settings[key], value.stringValue != nil else {
                throw Problem(description: "\(directory)/edge.json has no \(key) (start herald-load edge --dir \(directory) again)")
            }
            values[key] = value
        }
        return [
            "code": .string(code),
            "apns": ["team_id": values["team_id"]!, "key_id": values["key_id"]!, "key_path": values["key_path"]!, "topic": values["topic"]!,
                     "production_url": values["apns_url"]!, "sandbox_url": values["apns_url"]!, "ca_file": values["ca_file"]!],
            "fcm": ["service_account_path": values["service_account_path"]!, "endpoint": values["fcm_url"]!, "ca_file": values["ca_file"]!],
            "huawei": ["app_id": values["huawei_app_id"]!, "client_secret_file": values["huawei_client_secret_file"]!,
                       "token_url": values["huawei_token_url"]!, "endpoint": values["huawei_endpoint"]!, "ca_file": values["ca_file"]!],
            "web": ["vapid_private_key_file": values["vapid_private_key_file"]!, "subject": values["web_subject"]!,
                    "ca_file": values["ca_file"]!, "allow_private_endpoints": true],
        ]
    }

    /// What `/stats` says, as far as a campaign follows it.
    struct Counts {
        /// Pushes received (accepted or refused, APNs, FCM, Huawei and Web Push) and accepted.
        var received = 0
        var accepted = 0
        /// Refusals by `platform.reason`.
        var rejected: [String: Int] = [:]
        /// Reports made to Herald.
        var delivered = 0
        var opened = 0
        /// Reports scheduled and not yet made.
        var pendingReports = 0
        /// The edge's `--report-delay`, or nil when it does not report to Herald.
        var reportDelaySeconds: Double?
    }

    /// The edge's counts now, from `/stats`.
    func counts() throws -> Counts {
        let response = try client.request("GET", "/stats")
        guard response.status == 200, let stats = try? JSON.parse(response.body) else {
            throw HTTPClient.Failure(description: "edge /stats answered HTTP \(response.status)")
        }
        var rejected: [String: Int] = [:]
        let platforms = ["apns", "fcm", "huawei", "web"]
        for platform in platforms {
            for (reason, count) in stats[platform]?["rejected"]?.objectValue ?? [:] {
                rejected[platform + "." + reason, default: 0] += Int(count.lenientInt ?? 0)
            }
        }
        let accepted = platforms.reduce(0) { $0 + Int(stats[$1]?["accepted"]?.lenientInt ?? 0) }
        let reported = stats["reported"]
        return Counts(received: accepted + rejected.values.reduce(0, +), accepted: accepted, rejected: rejected,
                      delivered: Int(reported?["delivered"]?.lenientInt ?? 0), opened: Int(reported?["opened"]?.lenientInt ?? 0),
                      pendingReports: Int(reported?["pending"]?.lenientInt ?? 0), reportDelaySeconds: reported?["delay_s"]?.lenientDouble)
    }
}
