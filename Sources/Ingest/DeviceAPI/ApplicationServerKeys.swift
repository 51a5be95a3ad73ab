import Foundation
import Core
import WebPush

/// Each application's VAPID public key (RFC 8292), as the Pushwoosh Web SDK reads it from getConfig's
/// `features.vapid_key` and subscribes browsers with (`applicationServerKey`): the uncompressed
/// P-256 point of `web.vapid_private_key_file`, in base64url without padding. Read once at start;
/// an application without `web` has none.
struct ApplicationServerKeys: Sendable {
    private let byApp: [String: String]

    /// Reads every `web.vapid_private_key_file`; a file that cannot be read or is not a P-256 private
    /// key is a configuration error naming it.
    init(apps: [AppConfiguration]) throws(ConfigurationError) {
        var byApp: [String: String] = [:]
        for (index, app) in apps.enumerated() {
            guard let web = app.web else { continue }
            let key = "apps[\(index)].web.vapid_private_key_file", file = web.vapidPrivateKeyFile
            guard let pem = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw ConfigurationError(key: key, problem: "cannot read \(file)")
            }
            do {
                byApp[app.code] = Base64URL.encode(try P256Key(pem: pem).publicKey)
            } catch {
                throw ConfigurationError(key: key, problem: "\(file): \(error)")
            }
        }
        self.byApp = byApp
    }

    /// The key browsers of `app` subscribe with, or nil when the application has no `web` section.
    func key(app: String) -> String? { byApp[app] }
}
