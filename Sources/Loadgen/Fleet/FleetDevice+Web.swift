import Core
import WebPush

/// A browser's push subscription, derived from the device's hash as everything else: its endpoint
/// is `<push service>/push/<index>.<id>` on the edge's Web Push port, and its P-256 key pair and auth
/// secret come from the hash too, so the edge decrypts every push with nothing but the fleet's seed.
extension FleetDevice {
    /// The path prefix of every endpoint.
    static let webPushPathPrefix: StaticString = "/push/"
    /// Characters of the base64url id after the index.
    static let webPushIDLength = 16

    /// Writes the endpoint's path: `/push/<index>.<id>`.
    func writeWebPushPath(_ out: inout ByteWriter) {
        Self.writeWebPushPath(index: index, hash: hash, into: &out)
    }

    static func writeWebPushPath(index: Int, hash: UInt64, into out: inout ByteWriter) {
        out.append(webPushPathPrefix)
        out.int(index)
        out.byte(UInt8(ascii: "."))
        out.base64URL(Mix.hash(hash, 43), count: webPushIDLength)
    }

    /// The browser's private key (a 32-byte scalar): four hashes, below the group order (its first
    /// word is never 0xFFFFFFFF) and not zero.
    static func webPushPrivateKey(hash: UInt64) -> [UInt8] {
        var attempt: UInt64 = 0
        while true {
            var scalar: [UInt8] = []
            scalar.reserveCapacity(P256Key.privateKeyLength)
            for part in 0..<4 as Range<UInt64> {
                withUnsafeBytes(of: Mix.hash(hash, 50 &+ attempt &* 4 &+ part).bigEndian) { scalar.append(contentsOf: $0) }
            }
            if scalar[0..<4] != [0xFF, 0xFF, 0xFF, 0xFF], scalar.contains(where: { $0 != 0 }) { return scalar }
            attempt += 1
        }
    }

    /// The browser's public key (`p256dh`, an uncompressed point).
    static func webPushPublicKey(hash: UInt64) -> [UInt8] {
        guard let point = try? P256Key.publicKey(ofPrivateKey: webPushPrivateKey(hash: hash)) else {
            preconditionFailure("a P-256 scalar from 1 to the group order minus 1 has a public point")
        }
        return point
    }

    /// The browser's auth secret (16 bytes).
    static func webPushAuth(hash: UInt64) -> [UInt8] {
        var secret: [UInt8] = []
        secret.reserveCapacity(WebSubscription.authLength)
        withUnsafeBytes(of: Mix.hash(hash, 48).bigEndian) { secret.append(contentsOf: $0) }
        withUnsafeBytes(of: Mix.hash(hash, 49).bigEndian) { secret.append(contentsOf: $0) }
        return secret
    }

    /// A browser's hwid: the lower-case UUID every non-iOS device has.
    static func webHWID(hash: UInt64) -> String {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { buffer.deallocate() }
        var out = ByteWriter(buffer)
        out.uuid(Mix.hash(hash, 10), Mix.hash(hash, 11), uppercase: false)
        return String(decoding: out.written, as: UTF8.self)
    }
}
