internal import COpenSSL
import Foundation
import Core

/// A private key loaded from PEM (an APNs `.p8` EC P-256 key, or a service account's RSA key),
/// used to sign JWTs with OpenSSL.
///
/// `@unchecked Sendable` invariant: the `EVP_PKEY` is never mutated after loading; OpenSSL 3 allows
/// concurrent signing with one key, each call using its own digest context.
public final class SigningKey: @unchecked Sendable {
    public enum Algorithm: String, Sendable {
        /// ECDSA P-256 + SHA-256 with the JOSE raw `r‖s` signature (APNs).
        case es256 = "ES256"
        /// RSASSA-PKCS1-v1_5 + SHA-256 (Google service accounts).
        case rs256 = "RS256"
    }

    private let key: OpaquePointer

    public init(pem: String) throws(DeliveryError) {
        let bytes = Array(pem.utf8)
        let loaded: OpaquePointer? = bytes.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let loaded else { throw DeliveryError(message: "not a PEM private key (\(SigningKey.openSSLError()))", errno: 0) }
        key = loaded
    }

    public convenience init(path: String) throws(DeliveryError) {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw DeliveryError(message: "cannot read key file \(path)", errno: Glibc.errno)
        }
        try self.init(pem: text)
    }

    deinit { EVP_PKEY_free(key) }

    /// Signs `message` with SHA-256; for ES256 the DER signature is converted to 64 raw bytes.
    public func sign(_ message: [UInt8], algorithm: Algorithm) throws(DeliveryError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw DeliveryError(message: "EVP_MD_CTX_new failed", errno: 0) }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            throw DeliveryError(message: "EVP_DigestSignInit failed (\(Self.openSSLError()))", errno: 0)
        }
        var length = 0
        guard EVP_DigestSign(context, nil, &length, message, message.count) == 1 else {
            throw DeliveryError(message: "EVP_DigestSign failed (\(Self.openSSLError()))", errno: 0)
        }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else {
            throw DeliveryError(message: "EVP_DigestSign failed (\(Self.openSSLError()))", errno: 0)
        }
        signature.removeLast(signature.count - length)
        switch algorithm {
        case .rs256: return signature
        case .es256: return try Self.rawECDSA(fromDER: signature)
        }
    }

    /// DER `ECDSA-Sig-Value` → JOSE `r‖s`, each left-padded to 32 bytes.
    static func rawECDSA(fromDER der: [UInt8]) throws(DeliveryError) -> [UInt8] {
        var raw = [UInt8](repeating: 0, count: 64)
        let ok: Bool = der.withUnsafeBufferPointer { buffer in
            var pointer: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let signature = d2i_ECDSA_SIG(nil, &pointer, buffer.count) else { return false }
            defer { ECDSA_SIG_free(signature) }
            var r: OpaquePointer?
            var s: OpaquePointer?
            ECDSA_SIG_get0(signature, &r, &s)
            return raw.withUnsafeMutableBufferPointer { out in
                BN_bn2binpad(r, out.baseAddress, 32) == 32 && BN_bn2binpad(s, out.baseAddress! + 32, 32) == 32
            }
        }
        guard ok else { throw DeliveryError(message: "malformed ECDSA signature", errno: 0) }
        return raw
    }

    static func openSSLError() -> String {
        let code = ERR_get_error()
        guard code != 0 else { return "no OpenSSL error" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Compact JWS tokens.
public enum JWT {
    /// `b64url(header).b64url(claims).b64url(signature)`.
    public static func sign(header: JSON, claims: JSON, key: SigningKey, algorithm: SigningKey.Algorithm) throws(DeliveryError) -> String {
        let input = Base64URL.encode(header.encoded()) + "." + Base64URL.encode(claims.encoded())
        let signature = try key.sign(Array(input.utf8), algorithm: algorithm)
        return input + "." + Base64URL.encode(signature)
    }
}
