import Core
import Foundation
import HTTP2Server
import WebPush

/// A browsers' push service (RFC 8030) on the Web Push port: `POST /push/<index>.<id>` to a
/// subscription of the fleet whose seed the edge was given. A push is accepted (201) only when a
/// push service would take it and the browser could read it:
///
/// - the subscription exists: `<id>` is what the seed derives for `<index>` (else 404), and its
///   endpoint is not among `--dead-tokens` (else 410);
/// - `Authorization: vapid t=<JWT>, k=<key>` (RFC 8292): `k` is the edge's VAPID public key, the
///   one the browsers subscribed with (else 403); the JWT is ES256, signed by that key, with `aud`
///   the port's origin, `exp` in the future and at most 24 hours away, and a `mailto:` or
///   `https:` `sub` (else 401);
/// - `TTL` is a whole number, `Urgency` and `Topic` well formed, `Content-Encoding: aes128gcm`
///   (else 400), the body at most 4096 bytes (else 413);
/// - the body decrypts (RFC 8291) with the browser's private key and auth secret (else 400).
///
/// Verified tokens are remembered, so a token costs one ECDSA verification; a browser's key is
/// derived anew for each push (one scalar multiplication beside the decryption's ECDH), so memory
/// does not grow with the fleet.
final class WebPushEndpoint: Sendable {
    static let maxBodyBytes = 4096
    static let maxTokenSeconds: Int64 = 24 * 3600
    static let urgencies: Set<String> = ["very-low", "low", "normal", "high"]

    /// `https://host:port`: the audience tokens must name.
    let origin: String
    let seed: UInt64
    let vapid: KeyPair
    /// The VAPID public key in base64url (`k`).
    let vapidPublicKey: String
    let deadEndpoints: Set<String>
    /// Token → its `exp`, for tokens whose signature and claims verified.
    private let verified = Lock<[String: Int64]>([:])

    init(origin: String, seed: UInt64, vapid: KeyPair, vapidPublicKey: String, deadEndpoints: Set<String>) {
        self.origin = origin
        self.seed = seed
        self.vapid = vapid
        self.vapidPublicKey = vapidPublicKey
        self.deadEndpoints = deadEndpoints
    }

    /// A refused push: the status and the reason the edge counts it under.
    struct Refusal: Error, Equatable {
        let status: Int
        let reason: String

        var response: HTTP2Response {
            HTTP2Response(status: status, headers: [("content-type", "application/json")],
                          body: JSON.object(["reason": .string(reason)]).encoded())
        }
    }

    /// An accepted push: whose it is and what it said.
    struct Delivery {
        let index: Int
        /// The browser's hwid (for the reports).
        let hwid: String
        let payload: JSON
    }

    static func accepted() -> HTTP2Response {
        HTTP2Response(status: 201, headers: [("location", "/message/\(UInt64.random(in: 1...UInt64.max))")], body: [])
    }

    /// Checks and decrypts one push at `now` (unix seconds).
    func handle(_ request: HTTP2Request, now: Int64) throws(Refusal) -> Delivery {
        guard request.method == "POST" else { throw Refusal(status: 405, reason: "MethodNotAllowed") }
        let path = request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? ""
        guard let (index, hash) = subscription(path: path) else { throw Refusal(status: 404, reason: "NoSuchSubscription") }
        if deadEndpoints.contains(origin + path) { throw Refusal(status: 410, reason: "Gone") }
        try authorize(request.header("authorization"), now: now)
        guard let ttl = request.header("ttl"), !ttl.isEmpty, ttl.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else {
            throw Refusal(status: 400, reason: "BadTTL")
        }
        if let urgency = request.header("urgency"), !Self.urgencies.contains(urgency) { throw Refusal(status: 400, reason: "BadUrgency") }
        if let topic = request.header("topic"), !Self.isTopic(topic) { throw Refusal(status: 400, reason: "BadTopic") }
        guard request.header("content-encoding")?.lowercased() == "aes128gcm" else { throw Refusal(status: 400, reason: "BadContentEncoding") }
        guard request.body.count <= Self.maxBodyBytes else { throw Refusal(status: 413, reason: "PayloadTooLarge") }
        let plaintext: [UInt8]
        do {
            plaintext = try WebPushEncryption.decrypt(request.body, receiverPrivateKey: FleetDevice.webPushPrivateKey(hash: hash),
                                                      auth: FleetDevice.webPushAuth(hash: hash))
        } catch {
            throw Refusal(status: 400, reason: "DecryptionFailed")
        }
        return Delivery(index: index, hwid: FleetDevice.webHWID(hash: hash), payload: (try? JSON.parse(plaintext)) ?? .null)
    }

    /// The device index and hash of `/push/<index>.<id>`, when `<id>` is the one the seed derives.
    func subscription(path: String) -> (index: Int, hash: UInt64)? {
        let prefix = FleetDevice.webPushPathPrefix.description
        guard path.hasPrefix(prefix) else { return nil }
        let name = path.dropFirst(prefix.count)
        guard let dot = name.firstIndex(of: "."), let index = Int(name[..<dot]), index >= 0, index < 100_000_000 else { return nil }
        let hash = Mix.hash(seed, UInt64(index))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
        defer { buffer.deallocate() }
        var expected = ByteWriter(buffer)
        FleetDevice.writeWebPushPath(index: index, hash: hash, into: &expected)
        guard expected.written.elementsEqual(path.utf8) else { return nil }
        return (index, hash)
    }

    /// RFC 8292's checks of `Authorization: vapid t=…, k=…`.
    func authorize(_ authorization: String?, now: Int64) throws(Refusal) {
        guard let authorization, authorization.lowercased().hasPrefix("vapid ") else { throw Refusal(status: 401, reason: "MissingVAPID") }
        var parameters: [String: String] = [:]
        for part in authorization.dropFirst(6).split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { continue }
            parameters[pair[0].trimmingCharacters(in: .whitespaces).lowercased()] = pair[1].trimmingCharacters(in: .whitespaces)
        }
        guard let token = parameters["t"], let k = parameters["k"] else { throw Refusal(status: 401, reason: "MalformedVAPID") }
        // The subscription was made with the edge's key: a push under another key is not its sender's.
        guard k == vapidPublicKey else { throw Refusal(status: 403, reason: "VAPIDKeyMismatch") }
        let expiry: Int64
        if let known = verified.withLock({ $0[token] }) {
            expiry = known
        } else {
            guard let jws = CompactJWS(token), jws.header["alg"] == "ES256", vapid.verifies(jws.signature, of: jws.signingInput, algorithm: .es256)
            else { throw Refusal(status: 401, reason: "BadVAPIDToken") }
            guard jws.claims["aud"]?.stringValue == origin else { throw Refusal(status: 401, reason: "BadVAPIDAudience") }
            guard let subject = jws.claims["sub"]?.stringValue, subject.hasPrefix("mailto:") || subject.hasPrefix("https://") else {
                throw Refusal(status: 401, reason: "BadVAPIDSubject")
            }
            guard let exp = jws.time("exp") else { throw Refusal(status: 401, reason: "BadVAPIDToken") }
            expiry = exp
            verified.withLock { known in
                if known.count >= 10_000 { known.removeAll() }
                known[token] = exp
            }
        }
        guard expiry > now else { throw Refusal(status: 401, reason: "ExpiredVAPIDToken") }
        guard expiry - now <= Self.maxTokenSeconds else { throw Refusal(status: 401, reason: "VAPIDTokenTooLong") }
    }

    /// RFC 8030 §5.4: at most 32 characters of the URL-safe base64 alphabet.
    static func isTopic(_ topic: String) -> Bool {
        !topic.isEmpty && topic.utf8.count <= 32 && topic.utf8.allSatisfy { Mix.base64URLAlphabet.contains($0) }
    }
}
