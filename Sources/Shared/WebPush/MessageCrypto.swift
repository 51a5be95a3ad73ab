internal import COpenSSL

/// The OpenSSL objects message encryption uses, made once per process: the P-256 group for the
/// ECDH of RFC 8291 on raw scalars and points, SHA-256 for HKDF, and AES-128-GCM.
///
/// A message key pair lives for one message, so it is never made an `EVP_PKEY`: the sender's
/// public point is `k × G` and the shared secret the x coordinate of `k × P`, computed with the
/// group's own (constant-time) multiplication. A peer's point is checked to lie on the curve as it
/// is decoded, which is all P-256 needs (its cofactor is 1). Algorithms are fetched once, as an
/// implicit fetch per call costs more than hashing a short input.
///
/// `@unchecked Sendable` invariant: the group, digest and cipher are made in `init` and never
/// changed or freed; OpenSSL takes them `const`, so any number of threads use them at once.
final class MessageCrypto: @unchecked Sendable {
    static let shared = MessageCrypto()

    let group: OpaquePointer
    let sha256: OpaquePointer
    let aes128gcm: OpaquePointer

    private init() {
        // The default provider is part of libcrypto: these fail only when the library is broken.
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1), let sha256 = EVP_MD_fetch(nil, "SHA256", nil),
              let aes128gcm = EVP_CIPHER_fetch(nil, "AES-128-GCM", nil) else {
            fatalError("libcrypto has no P-256, SHA-256 or AES-128-GCM (\(P256Key.openSSLError()))")
        }
        self.group = group
        self.sha256 = sha256
        self.aes128gcm = aes128gcm
    }

    /// A new random private scalar, from 1 to the group order minus 1 (32 bytes, big-endian).
    func newScalar() throws(WebPushError) -> [UInt8] {
        guard let number = BN_secure_new() else { throw WebPushError("out of memory") }
        defer { BN_clear_free(number) }
        repeat {
            guard BN_priv_rand_range(number, EC_GROUP_get0_order(group)) == 1 else { throw WebPushError("no random bytes for a key") }
        } while BN_is_zero(number) == 1
        var scalar = [UInt8](repeating: 0, count: P256Key.privateKeyLength)
        guard BN_bn2binpad(number, &scalar, Int32(scalar.count)) == Int32(scalar.count) else { throw WebPushError("cannot encode a key") }
        return scalar
    }

    /// `scalar × G` as an uncompressed point; refuses a zero scalar.
    func publicPoint(of scalar: [UInt8]) throws(WebPushError) -> [UInt8] {
        try multiply(scalar: scalar, point: nil) { product, context throws(WebPushError) in
            var encoded = [UInt8](repeating: 0, count: P256Key.publicKeyLength)
            guard EC_POINT_point2oct(group, product, POINT_CONVERSION_UNCOMPRESSED, &encoded, encoded.count, context) == encoded.count else {
                throw WebPushError("cannot encode the public point")
            }
            return encoded
        }
    }

    /// Checks that `point` is an uncompressed point on P-256 (a subscription's `p256dh`).
    func check(point: [UInt8]) throws(WebPushError) {
        guard let decoded = EC_POINT_new(group) else { throw WebPushError("out of memory") }
        defer { EC_POINT_free(decoded) }
        try decode(point, into: decoded, context: nil)
    }

    /// Decodes the uncompressed `point` into `decoded`; OpenSSL refuses a point off the curve.
    private func decode(_ point: [UInt8], into decoded: OpaquePointer, context: OpaquePointer?) throws(WebPushError) {
        guard point.count == P256Key.publicKeyLength, point.first == 0x04 else {
            throw WebPushError("not an uncompressed P-256 point (65 bytes starting with 0x04)")
        }
        guard EC_POINT_oct2point(group, decoded, point, point.count, context) == 1 else { throw WebPushError("not a point on P-256") }
    }

    /// The ECDH shared secret of `scalar` and the uncompressed point `peer`: the x coordinate of
    /// `scalar × peer` (32 bytes). Refuses a point that is not on P-256.
    func sharedSecret(scalar: [UInt8], peer: [UInt8]) throws(WebPushError) -> [UInt8] {
        try multiply(scalar: scalar, point: peer) { product, context throws(WebPushError) in
            guard let x = BN_CTX_get(context), EC_POINT_get_affine_coordinates(group, product, x, nil, context) == 1 else {
                throw WebPushError("ECDH failed (\(P256Key.openSSLError()))")
            }
            var secret = [UInt8](repeating: 0, count: 32)
            guard BN_bn2binpad(x, &secret, Int32(secret.count)) == Int32(secret.count) else { throw WebPushError("ECDH failed") }
            return secret
        }
    }

    /// Hands `body` the product `scalar × point` (`scalar × G` when `point` is nil) and the
    /// context it was computed in; both are freed when `body` returns.
    private func multiply<Result>(scalar: [UInt8], point: [UInt8]?,
                                  _ body: (OpaquePointer, OpaquePointer) throws(WebPushError) -> Result) throws(WebPushError) -> Result {
        guard scalar.count == P256Key.privateKeyLength else { throw WebPushError("a P-256 private key is \(P256Key.privateKeyLength) bytes") }
        guard let context = BN_CTX_secure_new() else { throw WebPushError("out of memory") }
        defer { BN_CTX_free(context) }
        BN_CTX_start(context)
        defer { BN_CTX_end(context) }
        guard let number = BN_CTX_get(context), BN_bin2bn(scalar, Int32(scalar.count), number) != nil,
              let product = EC_POINT_new(group) else { throw WebPushError("out of memory") }
        defer { EC_POINT_free(product) }
        BN_set_flags(number, BN_FLG_CONSTTIME)
        guard BN_is_zero(number) == 0 else { throw WebPushError("not a valid P-256 private key") }
        if let point {
            guard let peer = EC_POINT_new(group) else { throw WebPushError("out of memory") }
            defer { EC_POINT_free(peer) }
            try decode(point, into: peer, context: context)
            guard EC_POINT_mul(group, product, nil, peer, number, context) == 1 else {
                throw WebPushError("ECDH failed (\(P256Key.openSSLError()))")
            }
        } else {
            guard EC_POINT_mul(group, product, number, nil, nil, context) == 1 else { throw WebPushError("not a valid P-256 private key") }
        }
        return try body(product, context)
    }

    /// HMAC-SHA-256 (RFC 2104) of `data` under `key`.
    func hmac(key: [UInt8], _ data: [UInt8]) throws(WebPushError) -> [UInt8] {
        let blockBytes = 64
        var block = key.count > blockBytes ? try digest(key) : key
        block += [UInt8](repeating: 0, count: blockBytes - block.count)
        let inner = try digest(block.map { $0 ^ 0x36 } + data)
        return try digest(block.map { $0 ^ 0x5C } + inner)
    }

    /// SHA-256 of `data`.
    func digest(_ data: [UInt8]) throws(WebPushError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard EVP_Digest(data, data.count, &out, &length, sha256, nil) == 1, length == 32 else { throw WebPushError("SHA-256 failed") }
        return out
    }
}
