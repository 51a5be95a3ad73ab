import Testing
@testable import HTTP2

/// How request URLs become origins (the key connections are kept by) and paths, and how header
/// lines become HTTP/2 fields.
@Suite struct OriginTests {
    @Test func httpsURLsSplitIntoOriginAndPath() throws {
        let apns = try #require(Origin.split("https://api.push.apple.com/3/device/abc"))
        #expect(apns.origin == Origin(host: "api.push.apple.com", port: 443, authority: "api.push.apple.com"))
        #expect(apns.path == "/3/device/abc")
        let mock = try #require(Origin.split("https://127.0.0.1:8443/v1/projects/p/messages:send?x=1"))
        #expect(mock.origin.host == "127.0.0.1" && mock.origin.port == 8443 && mock.origin.authority == "127.0.0.1:8443")
        #expect(mock.path == "/v1/projects/p/messages:send?x=1")
        let v6 = try #require(Origin.split("https://[::1]:9000"))
        #expect(v6.origin.host == "::1" && v6.origin.port == 9000 && v6.origin.authority == "[::1]:9000" && v6.path == "/")
        // The same host and port share connections whatever the path.
        #expect(Origin.split("https://h:1/a")?.origin == Origin.split("https://h:1/b")?.origin)
    }

    @Test func anythingButAnHTTPSURLWithAHostIsRefused() {
        for url in ["http://example.com/", "https:///path", "https://host:port/", "https://host:70000/", "https://[::1/", "example.com"] {
            #expect(Origin.split(url) == nil, "\(url)")
        }
    }

    @Test func aBatchsSplitterAgreesWithSplittingEachURL() {
        let urls = ["https://h:1/3/device/a", "https://h:1/3/device/b", "https://h:1/3/device/b", "https://h:10/x", "https://h:1",
                    "https://h:1/y", "https://h:1?q", "http://h:1/z", "https://h:1/z", "https://g/3", "https://g/3"]
        var splitter = Origin.Splitter()
        for url in urls {
            let expected = Origin.split(url), got = splitter.split(url)
            #expect(got?.origin == expected?.origin && got?.path == expected?.path, "\(url)")
        }
    }

    @Test func addressesAreToldFromNames() {
        #expect(Origin.isIPAddress("127.0.0.1") && Origin.isIPAddress("::1"))
        #expect(!Origin.isIPAddress("localhost") && !Origin.isIPAddress("api.push.apple.com"))
    }

    @Test func headerLinesBecomeLowerCasedFieldsWithoutBlanks() throws {
        let field = try #require(HTTP2HeaderList.split("APNs-Topic:  com.example.shop \t"))
        #expect(field.name == Array("apns-topic".utf8) && field.value == Array("com.example.shop".utf8))
        #expect(HTTP2HeaderList.split("no colon") == nil && HTTP2HeaderList.split(": empty name") == nil)
    }
}
