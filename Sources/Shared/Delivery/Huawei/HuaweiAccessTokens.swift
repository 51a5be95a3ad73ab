import Foundation
import Core
import HTTP2

/// OAuth 2.0 access tokens for Huawei Push Kit: the client credentials grant (the app ID as client
/// ID, its client secret) at `huawei.token_url`, cached until five minutes before they expire.
public final class HuaweiAccessTokens: Sendable {
    let settings: HuaweiSettings
    private let secret: String
    private let client: any HTTP2Transport
    private let clock: any Clock
    private let cache = AccessTokenCache()

    /// Reads the client secret from `settings.clientSecretPath`; fails when the file cannot be read
    /// or holds nothing but whitespace.
    public init(settings: HuaweiSettings, client: any HTTP2Transport, clock: any Clock) throws(DeliveryError) {
        let path = settings.clientSecretPath
        guard let data = FileManager.default.contents(atPath: path) else {
            throw DeliveryError(message: "cannot read client secret file \(path)", errno: Glibc.errno)
        }
        let secret = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !secret.isEmpty else { throw DeliveryError(message: "client secret file \(path) is empty", errno: 0) }
        self.settings = settings
        self.secret = secret
        self.client = client
        self.clock = clock
    }

    /// A valid access token; `replacing` forces a new one when that token was refused.
    public func token(replacing refused: String? = nil) throws(DeliveryError) -> String {
        try cache.token(now: clock.now(), replacing: refused) { () throws(DeliveryError) in
            let form = "grant_type=client_credentials&client_id=\(AccessTokenCache.formEncoded(settings.appID))"
                + "&client_secret=\(AccessTokenCache.formEncoded(secret))"
            return try AccessTokenCache.exchange(url: settings.tokenURL, form: form, client: client, what: "app ID and client secret")
        }
    }
}
