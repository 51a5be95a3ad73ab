internal import COpenSSL
import Core

/// Message encryption for Web Push (RFC 8291): the `aes128gcm` content coding of RFC 8188 with a
/// key agreed by ECDH on P-256 between a fresh sender key and the subscription's `p256dh`, mixed
/// with its `auth` secret through HKDF-SHA-256.
///
/// A message is one record of `recordSize` bytes at most, ended by the padding delimiter 0x02 and no
/// further padding. Push services need accept no body over 4096 bytes (RFC 8030 §7.2): with the
/// 86-byte header, the delimiter and the 16-byte tag that leaves `maxPlaintextBytes` (RFC 8291 §4),
/// and a longer plaintext is refused rather than sent to be rejected.
public enum WebPushEncryption {
    /// The `rs` of the content-coding header.
    public static let recordSize: UInt32 = 4096
    /// The body size every push service accepts.
    public static let maxBodyBytes = 4096
    /// salt (16) ‖ rs (4) ‖ idlen (1) ‖ keyid (65).
    public static let headerBytes = 16 + 4 + 1 + P256Key.publicKeyLength
    static let tagBytes = 16
    /// The longest plaintext whose message fits `maxBodyBytes` (`PayloadBuilder.webSizeLimit`, 3993).
    public static let maxPlaintextBytes = PayloadBuilder.webSizeLimit

    /// Why a plaintext of `count` bytes cannot be sent, or nil when it fits (a message is checked
    /// before it is accepted, with `PayloadBuilder.webSizeCheck`).
    static func sizeProblem(plaintextBytes count: Int) -> String? {
        count > maxPlaintextBytes
            ? "Web Push payload of \(count) bytes exceeds the limit of \(maxPlaintextBytes) bytes (4096 encrypted)" : nil
    }

    /// Encrypts `plaintext` for `subscription` with a new sender key pair and a random salt, both
    /// made for this message alone as RFC 8291 §3.1 and RFC 8188 §2.1 require (nothing of one
    /// message's keys is reused for another).
    public static func encrypt(_ plaintext: [UInt8], for subscription: WebSubscription) throws(WebPushError) -> [UInt8] {
        var salt = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&salt, Int32(salt.count)) == 1 else { throw WebPushError("no random bytes for the salt") }
        return try encrypt(plaintext, receiverPublicKey: subscription.p256dh, auth: subscription.auth,
                           senderPrivateKey: try MessageCrypto.shared.newScalar(), salt: salt)
    }

    /// Encrypts `plaintext` with the given sender private key (a 32-byte scalar) and salt (both fixed
    /// in RFC 8291's example) for the receiver's uncompressed point.
    public static func encrypt(_ plaintext: [UInt8], receiverPublicKey: [UInt8], auth: [UInt8], senderPrivateKey: [UInt8], salt: [UInt8])
        throws(WebPushError) -> [UInt8] {
        if let problem = sizeProblem(plaintextBytes: plaintext.count) { throw WebPushError(problem) }
        guard salt.count == 16 else { throw WebPushError("the salt is 16 bytes") }
        let crypto = MessageCrypto.shared
        let senderPublic = try crypto.publicPoint(of: senderPrivateKey)
        let keys = try contentKeys(secret: try crypto.sharedSecret(scalar: senderPrivateKey, peer: receiverPublicKey), auth: auth,
                                   receiverPublic: receiverPublicKey, senderPublic: senderPublic, salt: salt)
        var header = salt
        withUnsafeBytes(of: recordSize.bigEndian) { header.append(contentsOf: $0) }
        header.append(UInt8(P256Key.publicKeyLength))
        header.append(contentsOf: senderPublic)
        return header + (try seal(plaintext + [0x02], key: keys.cek, nonce: keys.nonce))
    }

    /// Decrypts a message made by `encrypt` (or any RFC 8291 sender) with the receiver's private key
    /// and auth secret; fails on a wrong key, a tampered body or a missing padding delimiter.
    public static func decrypt(_ body: [UInt8], receiver: P256Key, auth: [UInt8]) throws(WebPushError) -> [UInt8] {
        guard let scalar = receiver.privateKey else { throw WebPushError("decryption needs the receiver's private key") }
        return try decrypt(body, receiverPrivateKey: scalar, auth: auth)
    }

    /// `decrypt` with the receiver's private key as its 32-byte scalar.
    public static func decrypt(_ body: [UInt8], receiverPrivateKey: [UInt8], auth: [UInt8]) throws(WebPushError) -> [UInt8] {
        guard body.count >= headerBytes + tagBytes + 1 else { throw WebPushError("too short for an aes128gcm message") }
        let salt = Array(body[0..<16])
        let idLength = Int(body[20])
        guard idLength == P256Key.publicKeyLength, body.count >= 21 + idLength + tagBytes + 1 else {
            throw WebPushError("the keyid is not an uncompressed P-256 point")
        }
        let senderPublic = Array(body[21..<(21 + idLength)])
        let crypto = MessageCrypto.shared
        let keys = try contentKeys(secret: try crypto.sharedSecret(scalar: receiverPrivateKey, peer: senderPublic), auth: auth,
                                   receiverPublic: try crypto.publicPoint(of: receiverPrivateKey), senderPublic: senderPublic, salt: salt)
        var record = try open(Array(body[(21 + idLength)...]), key: keys.cek, nonce: keys.nonce)
        while record.last == 0 { record.removeLast() }
        guard record.last == 0x02 else { throw WebPushError("no final-record padding delimiter") }
        record.removeLast()
        return record
    }

    // MARK: Key derivation (RFC 8291 §3.3–3.4, RFC 8188 §2.2–2.3)

    /// The content-encryption key and nonce of the single record.
    static func contentKeys(secret: [UInt8], auth: [UInt8], receiverPublic: [UInt8], senderPublic: [UInt8], salt: [UInt8])
        throws(WebPushError) -> (cek: [UInt8], nonce: [UInt8]) {
        let keyInfo = Array("WebPush: info".utf8) + [0] + receiverPublic + senderPublic
        let ikm = try hkdf(salt: auth, ikm: secret, info: keyInfo, length: 32)
        let prk = try MessageCrypto.shared.hmac(key: salt, ikm)
        let cek = try expand(prk: prk, info: Array("Content-Encoding: aes128gcm".utf8) + [0], length: 16)
        let nonce = try expand(prk: prk, info: Array("Content-Encoding: nonce".utf8) + [0], length: 12)
        return (cek, nonce)
    }

    /// HKDF-SHA-256 with one block of output (`length` ≤ 32).
    static func hkdf(salt: [UInt8], ikm: [UInt8], info: [UInt8], length: Int) throws(WebPushError) -> [UInt8] {
        try expand(prk: try MessageCrypto.shared.hmac(key: salt, ikm), info: info, length: length)
    }

    static func expand(prk: [UInt8], info: [UInt8], length: Int) throws(WebPushError) -> [UInt8] {
        Array(try MessageCrypto.shared.hmac(key: prk, info + [0x01]).prefix(length))
    }

    /// AES-128-GCM: ciphertext ‖ tag.
    static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8]) throws(WebPushError) -> [UInt8] {
        guard let context = EVP_CIPHER_CTX_new() else { throw WebPushError("EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        var out = [UInt8](repeating: 0, count: plaintext.count + tagBytes)
        var written: Int32 = 0
        var tail: Int32 = 0
        guard EVP_EncryptInit_ex(context, MessageCrypto.shared.aes128gcm, nil, key, nonce) == 1,
              EVP_EncryptUpdate(context, &out, &written, plaintext, Int32(plaintext.count)) == 1,
              out.withUnsafeMutableBufferPointer({ EVP_EncryptFinal_ex(context, $0.baseAddress! + Int(written), &tail) }) == 1,
              Int(written + tail) == plaintext.count,
              out.withUnsafeMutableBufferPointer({ herald_gcm_get_tag(context, $0.baseAddress! + plaintext.count, Int32(tagBytes)) }) == 1
        else { throw WebPushError("AES-128-GCM encryption failed") }
        return out
    }

    /// AES-128-GCM: the plaintext of ciphertext ‖ tag, or an error when the tag does not match.
    static func open(_ sealed: [UInt8], key: [UInt8], nonce: [UInt8]) throws(WebPushError) -> [UInt8] {
        guard sealed.count >= tagBytes else { throw WebPushError("too short for AES-128-GCM") }
        guard let context = EVP_CIPHER_CTX_new() else { throw WebPushError("EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        let count = sealed.count - tagBytes
        var tag = Array(sealed[count...])
        var out = [UInt8](repeating: 0, count: max(1, count))
        var written: Int32 = 0
        var tail: Int32 = 0
        guard EVP_DecryptInit_ex(context, MessageCrypto.shared.aes128gcm, nil, key, nonce) == 1,
              EVP_DecryptUpdate(context, &out, &written, sealed, Int32(count)) == 1,
              herald_gcm_set_tag(context, &tag, Int32(tagBytes)) == 1,
              out.withUnsafeMutableBufferPointer({ EVP_DecryptFinal_ex(context, $0.baseAddress! + Int(written), &tail) }) == 1
        else { throw WebPushError("decryption failed: wrong key or tampered message") }
        return Array(out.prefix(Int(written + tail)))
    }
}
