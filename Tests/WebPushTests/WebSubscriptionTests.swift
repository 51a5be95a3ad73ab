import Testing
import Core
@testable import WebPush

@Suite struct WebSubscriptionTests {
    @Test func endpointsNeedAnHttpsSchemeAHostAndAValidPort() {
        for url in ["https://push.example.net:0/x", "https://push.example.net:65536/x", "https://push.example.net:443a/x",
                    "https://push.example.net:/x", "https://[::1/x", "https://[::1]x/x", "HTTPS://push.example.net/x", "https://:8443/x"] {
            #expect(WebSubscription.origin(of: url) == nil, "\(url)")
        }
        #expect(WebSubscription.origin(of: "https://push.example.net:65535/x") == "https://push.example.net:65535")
        #expect(WebSubscription.origin(of: "https://[2001:DB8::1]:443/x") == "https://[2001:db8::1]")
    }

    @Test func hostsOfThisMachineOrAPrivateNetworkAreNamed() {
        let refused = ["https://localhost/x": "localhost", "https://LOCALHOST.:8443/x": "localhost.", "https://push.localhost/x": "push.localhost",
                       "https://127.0.0.1:8443/x": "127.0.0.1", "https://127.1/x": "127.1", "https://2130706433/x": "2130706433",
                       "https://[::1]:8443/x": "::1", "https://[::ffff:192.168.0.1]/x": "::ffff:192.168.0.1", "https://10.0.0.7/x": "10.0.0.7",
                       "https://169.254.169.254/latest": "169.254.169.254", "https://[fd00::5]/x": "fd00::5", "https://[fe80::1]/x": "fe80::1"]
        for (url, host) in refused {
            #expect(WebSubscription.privateHost(of: url) == host, "\(url)")
        }
        for url in ["https://fcm.googleapis.com/fcm/send/abc", "https://updates.push.services.mozilla.com/wpush/v2/x",
                    "https://8.8.8.8/x", "https://[2001:4860:4860::8888]/x", "https://localhost.example.com/x", "not a url"] {
            #expect(WebSubscription.privateHost(of: url) == nil, "\(url)")
        }
    }
}
