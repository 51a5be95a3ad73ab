import Core
import Foundation
import HTTP2Server
import WebPush

/// The files a Herald app configuration needs to deliver to the edge, kept in `--dir`: a CA and the
/// server certificate it signed (for 127.0.0.1 and localhost), an APNs `.p8` key with its team and
/// key id, an FCM service-account JSON, a Huawei Push Kit client secret and a VAPID key (the
/// application server key browsers subscribe with, for Herald's `web` entry). Made once; later starts read them back, so a Herald
/// configured from `edge.json` keeps working across restarts of the edge.
struct EdgeCredentials {
    static let caFile = "ca.pem"
    static let certificateFile = "server.pem"
    static let serverKeyFile = "server-key.pem"
    static let identityFile = "apns.json"
    static let serviceAccountFile = "service-account.json"
    static let project = "herald-load-edge"
    static let clientEmail = "herald-load@herald-load-edge.iam.gserviceaccount.com"
    static let topic = "com.example.heraldload"
    static let huaweiSecretFile = "huawei-client-secret"
    static let huaweiAppID = "104000001"
    static let vapidKeyFile = "vapid.pem"
    /// The VAPID `sub` the printed `web` entry gives Herald.
    static let webSubject = "mailto:herald-load@example.com"

    let directory: String
    let teamID: String
    let keyID: String
    let apnsKey: KeyPair
    let serviceAccountKey: KeyPair
    let huaweiClientSecret: String
    /// The VAPID key pair, and its public point in base64url (`k`).
    let vapidKey: KeyPair
    let vapidPublicKey: String

    /// The file `name` in the edge's folder.
    func path(_ name: String) -> String { directory + "/" + name }
    var keyPath: String { path("AuthKey_\(keyID).p8") }

    /// Reads the credentials in `directory`, making whatever is missing.
    static func prepare(directory: String) throws -> EdgeCredentials {
        let manager = FileManager.default
        try manager.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let directory = URL(fileURLWithPath: directory).standardizedFileURL.path
        func path(_ name: String) -> String { directory + "/" + name }
        func write(_ text: String, _ name: String, private: Bool = false) throws {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path(name)))
            if `private` { try manager.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path(name)) }
        }

        if !manager.fileExists(atPath: path(caFile)) || !manager.fileExists(atPath: path(certificateFile))
            || !manager.fileExists(atPath: path(serverKeyFile)) {
            let authority = try CertificateAuthority(name: "herald-load edge CA")
            let server = try authority.serverCertificate(commonName: "herald-load edge", dnsNames: ["localhost"], ipAddresses: ["127.0.0.1", "::1"])
            try write(authority.certificatePEM, caFile)
            try write(server.certificatePEM + authority.certificatePEM, certificateFile)
            try write(server.key.privatePEM(), serverKeyFile, private: true)
        }

        var teamID = randomID()
        var keyID = randomID()
        if let identity = try? JSON.parse(Data(contentsOf: URL(fileURLWithPath: path(identityFile)))),
            let team = identity["team_id"]?.stringValue, let key = identity["key_id"]?.stringValue,
            manager.fileExists(atPath: path("AuthKey_\(key).p8")) {
            teamID = team
            keyID = key
        } else {
            try write(KeyPair(generating: .p256).privatePEM(), "AuthKey_\(keyID).p8", private: true)
            try write(JSON.object(["team_id": .string(teamID), "key_id": .string(keyID)]).text + "\n", identityFile)
        }
        let apnsKey = try KeyPair(pem: String(contentsOfFile: path("AuthKey_\(keyID).p8"), encoding: .utf8))

        let serviceAccountKey: KeyPair
        if let account = try? JSON.parse(Data(contentsOf: URL(fileURLWithPath: path(serviceAccountFile)))),
            let pem = account["private_key"]?.stringValue, let key = try? KeyPair(pem: pem) {
            serviceAccountKey = key
        } else {
            serviceAccountKey = try KeyPair(generating: .rsa(bits: 2048))
        }
        if (try? String(contentsOfFile: path(huaweiSecretFile), encoding: .utf8))?.isEmpty ?? true {
            try write(randomID() + randomID() + randomID() + "\n", huaweiSecretFile, private: true)
        }
        let huaweiSecret = try String(contentsOfFile: path(huaweiSecretFile), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        if !manager.fileExists(atPath: path(vapidKeyFile)) { try write(KeyPair(generating: .p256).privatePEM(), vapidKeyFile, private: true) }
        let vapidPEM = try String(contentsOfFile: path(vapidKeyFile), encoding: .utf8)
        let vapidPublicKey = Base64URL.encode(try P256Key(pem: vapidPEM).publicKey)
        return EdgeCredentials(directory: directory, teamID: teamID, keyID: keyID, apnsKey: apnsKey, serviceAccountKey: serviceAccountKey,
                               huaweiClientSecret: huaweiSecret, vapidKey: try KeyPair(pem: vapidPEM), vapidPublicKey: vapidPublicKey)
    }

    /// Writes the service account (its `token_uri` at the edge's FCM port) and `edge.json`; Huawei's
    /// endpoints share the FCM port.
    func publish(apnsURL: String, fcmURL: String, webPushURL: String, adminURL: String) throws {
        let account: JSON = [
            "type": "service_account", "project_id": .string(Self.project), "private_key_id": .string(keyID.lowercased()),
            "private_key": .string(try serviceAccountKey.privatePEM()), "client_email": .string(Self.clientEmail),
            "client_id": "100000000000000000000", "token_uri": .string(fcmURL + "/token"),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        ]
        try Data(account.encoded()).write(to: URL(fileURLWithPath: path(Self.serviceAccountFile)))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path(Self.serviceAccountFile))
        let edge: JSON = [
            "apns_url": .string(apnsURL), "fcm_url": .string(fcmURL), "ca_file": .string(path(Self.caFile)),
            "team_id": .string(teamID), "key_id": .string(keyID), "key_path": .string(keyPath), "topic": .string(Self.topic),
            "service_account_path": .string(path(Self.serviceAccountFile)), "admin_url": .string(adminURL),
            "huawei_app_id": .string(Self.huaweiAppID), "huawei_client_secret_file": .string(path(Self.huaweiSecretFile)),
            "huawei_token_url": .string(fcmURL + HuaweiEndpoint.tokenPath), "huawei_endpoint": .string(fcmURL),
            "web_push_url": .string(webPushURL), "vapid_private_key_file": .string(path(Self.vapidKeyFile)),
            "vapid_public_key": .string(vapidPublicKey), "web_subject": .string(Self.webSubject),
        ]
        try Data(edge.encoded() + [10]).write(to: URL(fileURLWithPath: path("edge.json")))
    }

    /// Ten upper-case letters and digits, the form of Apple's team and key ids.
    static func randomID() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return String((0..<10).map { _ in alphabet.randomElement()! })
    }
}
