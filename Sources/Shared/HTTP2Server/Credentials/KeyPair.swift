internal import COpenSSL
import Foundation

/// An EC P-256 or RSA key pair: made anew or read from PEM, written as PKCS#8 PEM, and used to check
/// JWS signatures (ES256, RS256) made with its private half.
///
/// `@unchecked Sendable`: the `EVP_PKEY` is never changed after `init`; OpenSSL 3 allows concurrent
/// verification with one key, each call using its own digest context. Freed exactly once, in `deinit`.
public final class KeyPair: @unchecked Sendable {
    public enum Kind: Sendable {
        /// EC on the P-256 curve (APNs `.p8` keys).
        case p256
        /// RSA of that many bits (Google service accounts).
        case rsa(bits: Int)
    }

    /// The JWS algorithms the edge checks.
    public enum Algorithm: String, Sendable {
        case es256 = "ES256"
        case rs256 = "RS256"
    }

    let key: OpaquePointer

    /// A new key pair.
    public init(generating kind: Kind) throws(HTTP2ServerError) {
        let made: OpaquePointer?
        switch kind {
        case .p256: made = herald_generate_p256_key()
        case .rsa(let bits): made = herald_generate_rsa_key(UInt32(bits))
        }
        guard let made else { throw HTTP2ServerError.openSSL("cannot generate a key") }
        key = made
    }

    /// A private key (PKCS#8, SEC1 or PKCS#1 PEM), or a public key (SubjectPublicKeyInfo PEM).
    public init(pem: String) throws(HTTP2ServerError) {
        let bytes = Array(pem.utf8)
        let loaded: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            if let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) { return key }
            ERR_clear_error()
            _ = BIO_ctrl(bio, BIO_CTRL_RESET, 0, nil)
            return PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
        guard let loaded else { throw HTTP2ServerError.openSSL("not a PEM key") }
        key = loaded
    }

    deinit { EVP_PKEY_free(key) }

    /// Whether this is an EC P-256 key (else RSA or another kind).
    public var isP256: Bool { EVP_PKEY_get_bits(key) == 256 && EVP_PKEY_get_base_id(key) == EVP_PKEY_EC }
    public var isRSA: Bool { EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA }

    /// The private key as PKCS#8 PEM (`BEGIN PRIVATE KEY`), the form of Apple's `.p8` files and of a
    /// service account's `private_key`.
    public func privatePEM() throws(HTTP2ServerError) -> String {
        try Self.writePEM { bio in PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) }
    }

    static func writePEM(_ write: (OpaquePointer) -> Int32) throws(HTTP2ServerError) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { throw HTTP2ServerError.openSSL("BIO_new") }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { throw HTTP2ServerError.openSSL("cannot write PEM") }
        var pointer: UnsafeMutablePointer<CChar>?
        let length = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &pointer)
        guard let pointer, length > 0 else { throw HTTP2ServerError("empty PEM") }
        return String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
    }

    /// Whether `signature` is a valid `algorithm` signature of `message` by this key. ES256
    /// signatures are JOSE's 64 raw bytes `r‖s`.
    public func verifies(_ signature: [UInt8], of message: some Collection<UInt8>, algorithm: Algorithm) -> Bool {
        let der: [UInt8]
        switch algorithm {
        case .rs256:
            guard isRSA else { return false }
            der = signature
        case .es256:
            guard isP256, signature.count == 64, let converted = Self.derECDSA(raw: signature) else { return false }
            der = converted
        }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            ERR_clear_error()
            return false
        }
        let message = Array(message)
        let result = EVP_DigestVerify(context, der, der.count, message, message.count)
        if result != 1 { ERR_clear_error() }
        return result == 1
    }

    /// JOSE `r‖s` → DER `ECDSA-Sig-Value`.
    static func derECDSA(raw: [UInt8]) -> [UInt8]? {
        guard let signature = ECDSA_SIG_new() else { return nil }
        defer { ECDSA_SIG_free(signature) }
        let r = BN_bin2bn(raw, 32, nil)
        let s = raw.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard let r, let s, ECDSA_SIG_set0(signature, r, s) == 1 else {
            BN_free(r)
            BN_free(s)
            return nil
        }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written: Int32 = der.withUnsafeMutableBufferPointer { buffer in
            var pointer: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_ECDSA_SIG(signature, &pointer)
        }
        return written == length ? der : nil
    }
}
