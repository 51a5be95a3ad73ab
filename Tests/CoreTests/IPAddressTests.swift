import Testing
import Core

@Suite struct IPAddressTests {
    @Test func addressesOfThisHostAndPrivateNetworksArePrivate() throws {
        let privateAddresses = ["0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.255", "127.0.0.1", "127.8.9.10",
                        "169.254.169.254", "172.16.0.1", "172.31.255.255", "192.168.1.1", "::", "::1", "fc00::1", "fd12:3456::1",
                        "fe80::1", "febf::1", "::ffff:127.0.0.1", "::ffff:10.1.2.3", "64:ff9b::a9fe:a9fe"]
        for text in privateAddresses {
            let address = try #require(IPAddress(numericHost: text), "\(text)")
            #expect(address.isPrivate, "\(text)")
        }
        let internet = ["1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0", "192.169.0.1",
                        "169.253.0.1", "142.250.74.110", "2001:4860:4860::8888", "2a00:1450:4001::200e", "fec0::1", "::2",
                        "::ffff:8.8.8.8", "64:ff9b::808:808"]
        for text in internet {
            let address = try #require(IPAddress(numericHost: text), "\(text)")
            #expect(!address.isPrivate, "\(text)")
        }
    }

    /// Every numeric form the resolver (and so `connect`) accepts is read as the address it means.
    @Test func numericHostsAreReadAsTheResolverReadsThem() {
        for (text, expected) in [("127.1", "127.0.0.1"), ("2130706433", "127.0.0.1"), ("0x7f.0.0.1", "127.0.0.1"), ("0", "0.0.0.0"),
                                 ("::FFFF:7F00:1", "::ffff:127.0.0.1"), ("8.8.8.8", "8.8.8.8")] {
            #expect(IPAddress(numericHost: text)?.description == expected, "\(text)")
        }
        #expect(IPAddress(numericHost: "127.1")?.isPrivate == true)
        for name in ["localhost", "push.example.com", "", "[::1]", "1.2.3.4.5", "256.0.0.1"] {
            #expect(IPAddress(numericHost: name) == nil, "\(name)")
        }
        #expect(IPAddress(bytes: [1, 2, 3]) == nil)
        #expect(IPAddress(bytes: [8, 8, 4, 4])?.description == "8.8.4.4")
    }
}
