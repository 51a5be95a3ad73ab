import Foundation

/// A second "host" for a test: a new network namespace joined to this one by a veth pair, this side
/// at `hostAddress` and the namespace at `namespaceAddress` (a /30 of 10.251.0.0/16). Needs root, as
/// CI has; removed again when the value goes away.
final class TwoHosts {
    let namespace: String
    let hostAddress: String
    let namespaceAddress: String
    /// The /30 both addresses are in.
    let network: String
    private let hostSide: String

    init() throws {
        let suffix = UInt8.random(in: 1...250)
        namespace = "herald-test-\(getpid())-\(suffix)"
        hostSide = "hv\(getpid() % 100_000)\(suffix)a"
        let namespaceSide = "hv\(getpid() % 100_000)\(suffix)b"
        (hostAddress, namespaceAddress, network) = ("10.251.\(suffix).1", "10.251.\(suffix).2", "10.251.\(suffix).0/30")
        try Self.ip(["netns", "add", namespace])
        do {
            try Self.ip(["link", "add", hostSide, "type", "veth", "peer", "name", namespaceSide])
            try Self.ip(["link", "set", namespaceSide, "netns", namespace])
            try Self.ip(["addr", "add", "\(hostAddress)/30", "dev", hostSide])
            try Self.ip(["link", "set", hostSide, "up"])
            try inside(["ip", "addr", "add", "\(namespaceAddress)/30", "dev", namespaceSide])
            try inside(["ip", "link", "set", namespaceSide, "up"])
            try inside(["ip", "link", "set", "lo", "up"])
        } catch {
            remove()
            throw error
        }
    }

    deinit { remove() }

    /// Sets this side of the link down (a partition: packets are dropped, and no connection is
    /// told) or up again.
    func setLink(up: Bool) throws {
        try Self.ip(["link", "set", hostSide, up ? "up" : "down"])
    }

    /// The prefix that runs a program inside the namespace.
    var wrapper: [String] { ["/usr/sbin/ip", "netns", "exec", namespace] }

    /// Runs `arguments` inside the namespace to completion and returns its output.
    @discardableResult
    func inside(_ arguments: [String]) throws -> String {
        try Self.ip(["netns", "exec", namespace] + arguments)
    }

    private func remove() {
        _ = try? Self.ip(["netns", "delete", namespace])
        _ = try? Self.ip(["link", "delete", hostSide])
    }

    @discardableResult
    private static func ip(_ arguments: [String]) throws -> String { try runTool("/usr/sbin/ip", arguments) }
}
