import SDKClient
import Testing

/// Load targets as users write them.
struct TargetURLTests {
    @Test func parsesTheFormsUsersWrite() throws {
        #expect(try TargetURL(parsing: "http://127.0.0.1:8080") == TargetURL(isTLS: false, host: "127.0.0.1", port: 8080))
        #expect(try TargetURL(parsing: "https://push.example.com/json/1.3/") == TargetURL(isTLS: true, host: "push.example.com", port: 443))
        #expect(try TargetURL(parsing: "https://example.com:8443/herald/") ==
                TargetURL(isTLS: true, host: "example.com", port: 8443, pathPrefix: "/herald"))
        let v6 = try TargetURL(parsing: "http://[::1]:9000/json/1.3")
        #expect(v6.host == "::1" && v6.port == 9000 && v6.hostHeader == "[::1]:9000" && v6.hostIsIPLiteral)
        #expect(try TargetURL(parsing: "http://localhost").hostHeader == "localhost")
        for bad in ["127.0.0.1:8080", "ftp://x", "http://", "http://:80", "http://h:0", "http://h:99999", "http://u@h", "http://[::1"] {
            #expect(throws: TargetURL.Invalid.self, "\(bad)") { try TargetURL(parsing: bad) }
        }
    }

    @Test func resolvesNamesAndLiterals() throws {
        let addresses = try TargetURL(parsing: "http://localhost:8080").resolve()
        #expect(addresses.first?.description == "127.0.0.1:8080")
        #expect(try TargetURL(parsing: "http://[::1]:81").resolve().map(\.description) == ["[::1]:81"])
        #expect(throws: TargetURL.Invalid.self) { try TargetURL(parsing: "http://no-such-host.invalid").resolve() }
    }
}
