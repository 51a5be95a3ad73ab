internal import COpenSSL
import Foundation

/// A P-256 key held by OpenSSL: a private key (a VAPID key) or a public key alone. A message's
/// key pair is never one of these (`MessageCrypto` works on its scalar and points).
///
/// `@unchecked Sendable` invariant: the `EVP_PKEY` is never mutated after it is made; OpenSSL 3
/// allows concurrent reads and exports from one key.
public final class P256Key: @unchecked Sendable {
    /// Length of an uncompressed point (`0x04 ‖ x ‖ y`).
    public static let publicKeyLength = 65
    /// Length of a private scalar.
    public static let privateKeyLength = 32

    let key: OpaquePointer
    /// Whether the key holds its private half.
    public let isPrivate: Bool

    private init(key: OpaquePointer, isPrivate: Bool) {
        self.key = key
        self.isPrivate = isPrivate
    }

    deinit { EVP_PKEY_free(key) }

    /// A new random private key.
    public static func generate() throws(WebPushError) -> P256Key {
        guard let key = herald_generate_p256_key() else { throw WebPushError("cannot generate a P-256 key (\(openSSLError()))") }
        return P256Key(key: key, isPrivate: true)
    }

    /// A private key read from PEM: SEC 1 (`EC PRIVATE KEY`, what `openssl ecparam -name prime256v1
    /// -genkey` writes, its `EC PARAMETERS` block skipped) or PKCS #8 (`PRIVATE KEY`). Any other key
    /// type or curve is refused.
    public convenience init(pem: String) throws(WebPushError) {
        let bytes = Array(pem.utf8)
        let loaded: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let loaded else { throw WebPushError("not a PEM private key (\(Self.openSSLError()))") }
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_is_a(loaded, "EC") == 1, EVP_PKEY_get_group_name(loaded, &name, name.count, &length) == 1,
              Self.text(name) == "prime256v1" else {
            EVP_PKEY_free(loaded)
            throw WebPushError("not an EC P-256 (prime256v1) private key")
        }
        self.init(key: loaded, isPrivate: true)
    }

    /// The private key in the PEM file at `path`.
    public convenience init(path: String) throws(WebPushError) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw WebPushError("cannot read key file \(path)", errno: Glibc.errno)
        }
        try self.init(pem: text)
    }

    /// A private key from its 32-byte scalar (test vectors, and keys derived from a seed).
    public convenience init(privateKey scalar: [UInt8]) throws(WebPushError) {
        guard scalar.count == Self.privateKeyLength else { throw WebPushError("a P-256 private key is \(Self.privateKeyLength) bytes") }
        let point = try Self.publicKey(ofPrivateKey: scalar)
        guard let made = Self.fromData(publicPoint: point, scalar: scalar) else {
            throw WebPushError("not a valid P-256 private key (\(Self.openSSLError()))")
        }
        self.init(key: made, isPrivate: true)
    }

    /// A public key from its uncompressed point; refuses anything that is not a point on P-256
    /// (OpenSSL checks the point is on the curve as it imports it; P-256 has cofactor 1, so every such
    /// point is in the group).
    public convenience init(publicKey point: [UInt8]) throws(WebPushError) {
        guard point.count == Self.publicKeyLength, point.first == 0x04 else {
            throw WebPushError("not an uncompressed P-256 point (65 bytes starting with 0x04)")
        }
        guard let made = Self.fromData(publicPoint: point, scalar: nil) else {
            throw WebPushError("not a point on P-256")
        }
        self.init(key: made, isPrivate: false)
    }

    /// The uncompressed public point (65 bytes).
    /// OpenSSL encodes the point in the form the key carries (a key read from PEM may carry the
    /// compressed one); a compressed point is expanded here.
    public var publicKey: [UInt8] {
        var encoded = [UInt8](repeating: 0, count: Self.publicKeyLength)
        var length = 0
        let ok = EVP_PKEY_get_octet_string_param(key, "pub", &encoded, encoded.count, &length) == 1
        let point = ok ? Self.uncompressed(Array(encoded.prefix(length))) : nil
        // Every key read or made here is an EC P-256 key with its public point.
        precondition(point != nil, "P-256 key without a public point")
        return point!
    }

    /// The uncompressed public point (`scalar × G`) of a 32-byte private scalar.
    public static func publicKey(ofPrivateKey scalar: [UInt8]) throws(WebPushError) -> [UInt8] {
        try MessageCrypto.shared.publicPoint(of: scalar)
    }

    /// The private scalar (32 bytes, big-endian); nil for a public key.
    public var privateKey: [UInt8]? {
        guard isPrivate else { return nil }
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key, "priv", &number) == 1, let number else { return nil }
        defer { BN_clear_free(number) }
        var scalar = [UInt8](repeating: 0, count: Self.privateKeyLength)
        return BN_bn2binpad(number, &scalar, Int32(scalar.count)) == Int32(scalar.count) ? scalar : nil
    }

    /// The private key as PKCS #8 PEM (`-----BEGIN PRIVATE KEY-----`).
    public func pem() throws(WebPushError) -> String {
        guard isPrivate else { throw WebPushError("a public key has no private PEM") }
        guard let bio = BIO_new(BIO_s_mem()) else { throw WebPushError("BIO_new failed") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else {
            throw WebPushError("cannot write the key as PEM (\(Self.openSSLError()))")
        }
        var text = [UInt8](repeating: 0, count: 1024)
        let count = BIO_read(bio, &text, Int32(text.count))
        guard count > 0 else { throw WebPushError("cannot write the key as PEM") }
        return String(decoding: text.prefix(Int(count)), as: UTF8.self)
    }

    /// Writes this private key as PEM to a new file at `path` (mode 0600; an existing file is never
    /// overwritten).
    public func write(toNewFile path: String) throws(WebPushError) {
        let text = Array(try pem().utf8)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw WebPushError("cannot create \(path)", errno: Glibc.errno) }
        defer { close(fd) }
        guard Glibc.write(fd, text, text.count) == text.count, fsync(fd) == 0 else { throw WebPushError("cannot write \(path)", errno: Glibc.errno) }
    }

    // MARK: OpenSSL helpers

    /// `encoded` (a P-256 point, compressed or not) as an uncompressed point; nil when it is none.
    private static func uncompressed(_ encoded: [UInt8]) -> [UInt8]? {
        if encoded.count == publicKeyLength && encoded.first == 0x04 { return encoded }
        guard let group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else { return nil }
        defer { EC_GROUP_free(group) }
        guard let point = EC_POINT_new(group) else { return nil }
        defer { EC_POINT_free(point) }
        var expanded = [UInt8](repeating: 0, count: publicKeyLength)
        guard EC_POINT_oct2point(group, point, encoded, encoded.count, nil) == 1,
              EC_POINT_point2oct(group, point, POINT_CONVERSION_UNCOMPRESSED, &expanded, expanded.count, nil) == publicKeyLength else {
            return nil
        }
        return expanded
    }

    /// An `EVP_PKEY` from its parts: a public key alone when `scalar` is nil, else a key pair.
    private static func fromData(publicPoint: [UInt8], scalar: [UInt8]?) -> OpaquePointer? {
        guard let builder = OSSL_PARAM_BLD_new() else { return nil }
        defer { OSSL_PARAM_BLD_free(builder) }
        let number = scalar.flatMap { BN_bin2bn($0, Int32($0.count), nil) }
        defer { BN_clear_free(number) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, "EC", nil), EVP_PKEY_fromdata_init(context) == 1 else { return nil }
        defer { EVP_PKEY_CTX_free(context) }
        let selection = scalar == nil ? herald_evp_pkey_public_key_selection() : herald_evp_pkey_keypair_selection()
        // The builder keeps the names, strings and octets it is given by reference until
        // `OSSL_PARAM_BLD_to_param`, and the parameters refer to the names: every buffer stays valid
        // until the key is made.
        return "group".withCString { groupKey in
            "pub".withCString { pubKey in
                "priv".withCString { privKey in
                    groupName.withUnsafeBufferPointer { group in
                        publicPoint.withUnsafeBufferPointer { point -> OpaquePointer? in
                            guard OSSL_PARAM_BLD_push_utf8_string(builder, groupKey, group.baseAddress, 0) == 1,
                                  OSSL_PARAM_BLD_push_octet_string(builder, pubKey, point.baseAddress, point.count) == 1,
                                  number.map({ OSSL_PARAM_BLD_push_BN(builder, privKey, $0) == 1 }) ?? true,
                                  let params = OSSL_PARAM_BLD_to_param(builder) else { return nil }
                            defer { OSSL_PARAM_free(params) }
                            var made: OpaquePointer?
                            guard EVP_PKEY_fromdata(context, &made, selection, params) == 1 else { return nil }
                            return made
                        }
                    }
                }
            }
        }
    }

    /// OpenSSL's name of P-256, NUL-terminated.
    private static let groupName: [CChar] = Array("prime256v1".utf8CString)

    static func openSSLError() -> String {
        let code = ERR_get_error()
        guard code != 0 else { return "no OpenSSL error" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return text(buffer)
    }

    static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
