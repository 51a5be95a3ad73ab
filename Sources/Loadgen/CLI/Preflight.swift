import Core
import SDKClient

/// The one request `fleet` and `campaign` make before anything else: the Device API's read-only
/// `getConfig` for the app. It fails when nothing answers at the target, when what answers is not
/// Herald's Device API, or when Herald does not know the app, so that a wrong port or code ends the
/// command at once (exit 2, one line) instead of after a run of failures.
enum Preflight {
    struct Problem: Error, CustomStringConvertible {
        let description: String
    }

    /// Checks that `target` answers the Device API and knows `app`; the problem names which flag is
    /// wrong. Returns Herald's version as its `/healthz` gives it (nil when it does not say).
    @discardableResult
    static func check(target: TargetURL, app: String, tls: TLSClientContext?, timeoutSeconds: Double) throws(Problem) -> String? {
        let client = HTTPClient(host: target.host, port: target.port, tls: tls)
        defer { client.disconnect() }
        let body = JSON.object(["request": ["application": .string(app), "hwid": "herald-load-preflight"]]).encoded()
        let response: HTTPClient.Response
        do {
            response = try client.request("POST", target.pathPrefix + "/json/1.3/getConfig", body: body,
                                          headers: [("Content-Type", "application/json")],
                                          timeoutSeconds: max(1, Int(timeoutSeconds.rounded(.up))))
        } catch {
            throw Problem(description: "cannot reach --target \(target): \(error)")
        }
        try judge(status: response.status, body: response.body, target: target, app: app)
        let health = try? client.request("GET", target.pathPrefix + "/healthz", timeoutSeconds: max(1, Int(timeoutSeconds.rounded(.up))))
        return health.flatMap { try? JSON.parse($0.body) }?["version"]?.stringValue
    }

    /// What a getConfig reply says about the flags: nil problem for Herald's status_code 200.
    static func judge(status: Int, body: [UInt8], target: TargetURL, app: String) throws(Problem) {
        let envelope = try? JSON.parse(body)
        guard status == 200, let code = envelope?["status_code"]?.lenientInt else {
            throw Problem(description: "--target \(target) answered getConfig with HTTP \(status), not Herald's Device API envelope")
        }
        guard code == 200 else {
            let message = envelope?["status_message"]?.stringValue ?? ""
            throw Problem(description: "--app \(app): Herald answered status_code \(code): \(message)")
        }
    }
}
