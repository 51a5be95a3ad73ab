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
        let path = directory + "/edge.json"
        guard let data = FileManager.default.contents(atPath: path), let settings = try? JSON.parse(data) else {
            throw Problem(description: "no edge.json in \(directory) (start herald-load edge --dir \(directory) first)")
        }
        guard let text = settings["admin_url"]?.stringValue, let url = try? TargetURL(parsing: text), !url.isTLS else {
            throw Problem(description: "\(path) has no http admin_url")
        }
        client = HTTPClient(host: url.host, port: url.port)
    }

    /// Pushes the edge has received (accepted or refused, APNs, FCM and Huawei) and accepted, from `/stats`.
    func counts() throws -> (received: Int, accepted: Int, rejected: [String: Int], delivered: Int, opened: Int) {
        let response = try client.request("GET", "/stats")
        guard response.status == 200, let stats = try? JSON.parse(response.body) else {
            throw HTTPClient.Failure(description: "edge /stats answered HTTP \(response.status)")
        }
        var rejected: [String: Int] = [:]
        let platforms = ["apns", "fcm", "huawei"]
        for platform in platforms {
            for (reason, count) in stats[platform]?["rejected"]?.objectValue ?? [:] {
                rejected[platform + "." + reason, default: 0] += Int(count.lenientInt ?? 0)
            }
        }
        let accepted = platforms.reduce(0) { $0 + Int(stats[$1]?["accepted"]?.lenientInt ?? 0) }
        return (accepted + rejected.values.reduce(0, +), accepted, rejected,
                Int(stats["reported"]?["delivered"]?.lenientInt ?? 0), Int(stats["reported"]?["opened"]?.lenientInt ?? 0))
    }
}
