import Testing
@testable import Core

@Suite struct HuaweiSettingsTests {
    func decode(_ huawei: JSON) throws(ConfigurationError) -> Configuration {
        try Configuration.decode(["apps": [["code": "ABCDE-12345", "api_token": "t", "huawei": huawei]]], baseDirectory: "/etc/herald")
    }

    func problem(_ huawei: JSON) -> ConfigurationError? {
        do {
            _ = try decode(huawei)
            return nil
        } catch {
            return error
        }
    }

    @Test func anAppMayDeliverThroughHuaweiAloneWithHuaweisHostsByDefault() throws {
        let settings = try #require(try decode(["app_id": "104567890", "client_secret_file": "keys/huawei-secret"]).apps[0].huawei)
        #expect(settings.appID == "104567890")
        #expect(settings.clientSecretPath == "/etc/herald/keys/huawei-secret")
        #expect(settings.tokenURL == "https://oauth-login.cloud.huawei.com/oauth2/v3/token")
        #expect(settings.endpoint == "https://push-api.cloud.huawei.com")
        #expect(settings.caFile == nil && settings.connections == HuaweiSettings.defaultConnections)

        let mock = try #require(try decode([
            "app_id": "1", "client_secret_file": "/s", "token_url": "https://127.0.0.1:9/oauth2/v3/token",
            "endpoint": "https://127.0.0.1:9", "ca_file": "pki/ca.pem", "connections": 3,
        ]).apps[0].huawei)
        #expect(mock.tokenURL == "https://127.0.0.1:9/oauth2/v3/token" && mock.endpoint == "https://127.0.0.1:9")
        #expect(mock.caFile == "/etc/herald/pki/ca.pem" && mock.connections == 3)
    }

    @Test func badSettingsNameTheKey() {
        #expect(problem(["client_secret_file": "s"])?.key == "apps[0].huawei.app_id")
        #expect(problem(["app_id": "12 34", "client_secret_file": "s"])?.key == "apps[0].huawei.app_id")
        #expect(problem(["app_id": "1"])?.key == "apps[0].huawei.client_secret_file")
        #expect(problem(["app_id": "1", "client_secret_file": ""])?.key == "apps[0].huawei.client_secret_file")
        #expect(problem(["app_id": "1", "client_secret_file": "s", "endpoint": "http://x"])?.key == "apps[0].huawei.endpoint")
        #expect(problem(["app_id": "1", "client_secret_file": "s", "token_url": "ftp://x"])?.key == "apps[0].huawei.token_url")
        #expect(problem(["app_id": "1", "client_secret_file": "s", "ca_file": ""])?.key == "apps[0].huawei.ca_file")
        #expect(problem(["app_id": "1", "client_secret_file": "s", "connections": 0])?.key == "apps[0].huawei.connections")
        #expect(problem(["app_id": "1", "client_secret_file": "s", "secret": "x"])?.key == "apps[0].huawei.secret")
    }
}
