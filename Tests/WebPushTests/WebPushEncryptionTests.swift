import Testing
import Core
@testable import WebPush

/// RFC 8291 Appendix A: the sender's key and the salt are fixed, so the message is known to the byte.
@Suite struct WebPushEncryptionTests {
    static func bytes(_ text: String) -> [UInt8] { Base64URL.decode(text)! }

    let plaintext = Array("When I grow up, I want to be a watermelon".utf8)
    let senderPrivate = bytes("yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw")
    let senderPublic = bytes("BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8")
    let receiverPrivate = bytes("q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94")
    let receiverPublic = bytes("BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
    let auth = bytes("BTBZMqHH6r4Tts7J_aSIgg")
    let salt = bytes("DGv6ra1nlYgDCS1FRnbzlw")
    let message = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"

    @Test func theAppendixExampleEncryptsToTheRFCBytes() throws {
        let sender = try P256Key(privateKey: senderPrivate)
        #expect(sender.publicKey == senderPublic)
        let body = try WebPushEncryption.encrypt(plaintext, receiverPublicKey: receiverPublic, auth: auth,
                                                 senderPrivateKey: senderPrivate, salt: salt)
        #expect(Base64URL.encode(body) == message)
        #expect(try WebPushEncryption.decrypt(body, receiverPrivateKey: receiverPrivate, auth: auth) == plaintext)
        #expect(try P256Key(privateKey: receiverPrivate).privateKey == receiverPrivate)
    }

    @Test func messageKeysAgreeBothWaysAndBadPointsAreRefused() throws {
        let crypto = MessageCrypto.shared
        for _ in 0..<4 {
            let a = try crypto.newScalar(), b = try crypto.newScalar()
            let ab = try crypto.sharedSecret(scalar: a, peer: try crypto.publicPoint(of: b))
            let ba = try crypto.sharedSecret(scalar: b, peer: try crypto.publicPoint(of: a))
            #expect(ab.count == 32 && ab == ba)
            // A scalar's point is the one OpenSSL gives the key made from it.
            #expect(try crypto.publicPoint(of: a) == (try P256Key(privateKey: a).publicKey))
        }
        // Points off the curve, and a zero scalar, are refused.
        var offCurve = receiverPublic
        offCurve[64] ^= 1
        #expect(throws: WebPushError.self) { try crypto.sharedSecret(scalar: senderPrivate, peer: offCurve) }
        #expect(throws: WebPushError.self) { try crypto.sharedSecret(scalar: senderPrivate, peer: Array(receiverPublic.prefix(33))) }
        #expect(throws: WebPushError.self) { try crypto.publicPoint(of: [UInt8](repeating: 0, count: 32)) }
        // HMAC-SHA-256 of RFC 4231's test cases 2 and 6 (a key longer than the block is hashed first).
        #expect(try crypto.hmac(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8))
                == Self.hex("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
        #expect(try crypto.hmac(key: [UInt8](repeating: 0xAA, count: 131), Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
                == Self.hex("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"))
    }

    static func hex(_ text: String) -> [UInt8] {
        stride(from: 0, to: text.count, by: 2).map { UInt8(text.dropFirst($0).prefix(2), radix: 16)! }
    }

    @Test func theIntermediateValuesAreTheRFCs() throws {
        let secret = try MessageCrypto.shared.sharedSecret(scalar: senderPrivate, peer: receiverPublic)
        #expect(try MessageCrypto.shared.sharedSecret(scalar: receiverPrivate, peer: senderPublic) == secret)
        #expect(Base64URL.encode(secret) == "kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs")
        let keys = try WebPushEncryption.contentKeys(secret: secret, auth: auth, receiverPublic: receiverPublic,
                                                     senderPublic: senderPublic, salt: salt)
        #expect(Base64URL.encode(keys.cek) == "oIhVW04MRdy2XN9CiKLxTg")
        #expect(Base64URL.encode(keys.nonce) == "4h_95klXJ5E_qnoN")
    }

    @Test func theReceiverDecryptsTheExampleAndAFreshMessage() throws {
        let receiver = try P256Key(privateKey: receiverPrivate)
        #expect(receiver.publicKey == receiverPublic)
        #expect(try WebPushEncryption.decrypt(Self.bytes(message), receiver: receiver, auth: auth) == plaintext)
        let subscription = try WebSubscription(endpoint: "https://push.example.net/send/abc", p256dh: receiverPublic, auth: auth)
        let first = try WebPushEncryption.encrypt(plaintext, for: subscription)
        let second = try WebPushEncryption.encrypt(plaintext, for: subscription)
        // A new salt and sender key per message.
        #expect(first[0..<16] != second[0..<16])
        #expect(first[21..<86] != second[21..<86])
        #expect(first.count == WebPushEncryption.headerBytes + plaintext.count + 1 + 16)
        #expect(try WebPushEncryption.decrypt(first, receiver: receiver, auth: auth) == plaintext)
        var tampered = first
        tampered[tampered.count - 1] ^= 1
        #expect(throws: WebPushError.self) { try WebPushEncryption.decrypt(tampered, receiver: receiver, auth: auth) }
        #expect(throws: WebPushError.self) { try WebPushEncryption.decrypt(first, receiver: receiver, auth: [UInt8](repeating: 1, count: 16)) }
    }

    @Test func theLongestPlaintextMakesA4096ByteBodyAndOneMoreIsRefused() throws {
        let subscription = try WebSubscription(endpoint: "https://push.example.net/x", p256dh: receiverPublic, auth: auth)
        #expect(WebPushEncryption.maxPlaintextBytes == 3993)
        let longest = [UInt8](repeating: 0x41, count: WebPushEncryption.maxPlaintextBytes)
        #expect(try WebPushEncryption.encrypt(longest, for: subscription).count == 4096)
        #expect(WebPushEncryption.sizeProblem(plaintextBytes: 3993) == nil)
        #expect(WebPushEncryption.sizeProblem(plaintextBytes: 3994)?.contains("3994 bytes exceeds the limit of 3993") == true)
        #expect(throws: WebPushError.self) { try WebPushEncryption.encrypt(longest + [0x41], for: subscription) }
    }

    @Test func subscriptionsAreCheckedFieldByField() throws {
        let key = Base64URL.encode(receiverPublic), secret = Base64URL.encode(auth)
        // Standard base64 with padding, as the Web SDK sends it, is accepted too.
        let padded = try WebSubscription(endpoint: "https://fcm.googleapis.com/fcm/send/x",
                                         p256dh: key.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") + "=",
                                         auth: secret + "==")
        #expect(padded.p256dh == receiverPublic && padded.auth == auth)
        func problem(_ endpoint: String, _ p256dh: String, _ auth: String) -> String? {
            do {
                _ = try WebSubscription(endpoint: endpoint, p256dh: p256dh, auth: auth)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(problem("http://push.example.net/x", key, secret)?.hasPrefix("endpoint:") == true)
        #expect(problem("https:///x", key, secret)?.hasPrefix("endpoint:") == true)
        for split in ["/x HTTP/1.1\r\nhost: a\r\n\r\nDELETE /y", "/x y", "/x\ny", "/x\u{7f}", "/\u{e9}"] {
            #expect(problem("https://push.example.net" + split, key, secret)?.hasPrefix("endpoint:") == true, "\(split)")
        }
        #expect(problem("https://push.example.net/x", "not base64!", secret)?.hasPrefix("p256dh:") == true)
        // 64 bytes, and 65 bytes that are not on the curve.
        #expect(problem("https://push.example.net/x", Base64URL.encode(Array(receiverPublic.dropLast())), secret)?.hasPrefix("p256dh:") == true)
        var offCurve = receiverPublic
        offCurve[64] ^= 1
        #expect(problem("https://push.example.net/x", Base64URL.encode(offCurve), secret) == "p256dh: not a point on P-256")
        #expect(problem("https://push.example.net/x", key, Base64URL.encode([1, 2, 3])) == "auth: must be 16 bytes, found 3")
    }

    @Test func originsAreSchemeHostAndANonDefaultPort() {
        #expect(WebSubscription.origin(of: "https://fcm.googleapis.com/fcm/send/abc:def") == "https://fcm.googleapis.com")
        #expect(WebSubscription.origin(of: "https://Updates.Push.Services.Mozilla.com:443/wpush/v2/x") == "https://updates.push.services.mozilla.com")
        #expect(WebSubscription.origin(of: "https://127.0.0.1:8443/push/1") == "https://127.0.0.1:8443")
        #expect(WebSubscription.origin(of: "https://[::1]:8443/push/1") == "https://[::1]:8443")
        #expect(WebSubscription.origin(of: "http://example.com/x") == nil)
        #expect(WebSubscription.origin(of: "https://user@example.com/x") == nil)
    }
}
