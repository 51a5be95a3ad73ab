/// `apps[].huawei`: Huawei Push Kit credentials and hosts, for devices of `device_type` 17.
public struct HuaweiSettings: Sendable {
    /// `app_id`: the app's ID in AppGallery Connect, which is also its OAuth 2.0 client ID.
    public var appID: String
    /// `client_secret_file`: a file holding the app's client secret (surrounding whitespace ignored),
    /// resolved against the configuration file's folder.
    public var clientSecretPath: String
    /// `token_url`: the OAuth 2.0 token endpoint.
    public var tokenURL = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
    /// `endpoint`: the Push Kit host; messages go to `<endpoint>/v1/<app_id>/messages:send`.
    public var endpoint = "https://push-api.cloud.huawei.com"
    /// `ca_file`: an extra trusted CA (PEM) for the endpoint and token URL, for tests against a mock.
    public var caFile: String?
    /// `connections`: HTTP/2 connections a worker keeps to the Push Kit host.
    public var connections = HuaweiSettings.defaultConnections
    public static let defaultConnections = 2

    public init(appID: String, clientSecretPath: String) {
        self.appID = appID
        self.clientSecretPath = clientSecretPath
    }
}

extension Configuration {
    static func decodeHuawei(_ huawei: inout ConfigReader, resolve: (String) -> String) throws(ConfigurationError) -> HuaweiSettings {
        let appID = try huawei.requiredString("app_id")
        guard appID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
            throw ConfigurationError(key: huawei.keyPath("app_id"), problem: "expected the app ID of AppGallery Connect (letters and digits)")
        }
        var settings = HuaweiSettings(appID: appID, clientSecretPath: resolve(try huawei.requiredString("client_secret_file")))
        if let url = try huawei.string("token_url") { settings.tokenURL = try httpsURL(url, key: huawei.keyPath("token_url")) }
        if let url = try huawei.string("endpoint") { settings.endpoint = try httpsURL(url, key: huawei.keyPath("endpoint")) }
        if let caFile = try huawei.string("ca_file") {
            guard !caFile.isEmpty else { throw ConfigurationError(key: huawei.keyPath("ca_file"), problem: "must not be empty") }
            settings.caFile = resolve(caFile)
        }
        settings.connections = try huawei.int("connections", default: settings.connections, range: 1...64)
        try huawei.finish()
        return settings
    }
}
