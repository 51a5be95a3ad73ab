import Core
import HTTP2

/// The send loop of the APIs that take an OAuth 2.0 bearer token (FCM, Huawei Push Kit): every push
/// is one request, all multiplexed; pushes whose token was refused are sent once more with a fresh
/// one. When no token can be had, every push waiting for one gets `AccessTokenError`: retried when
/// the token endpoint could not be reached, failed when it refused the credentials.
enum BearerDelivery {
    /// One outcome per push, in order. `token` gives an access token (replacing the refused one it
    /// is passed); `verdict` reads the reply to one push; `tokenFailed` is told why no token came.
    static func deliver(_ pushes: [OutgoingPush], url: String, client: any HTTP2Transport,
                        token: (_ refused: String?) throws(DeliveryError) -> String,
                        verdict: (HTTP2Response, OutgoingPush) -> Verdict,
                        tokenFailed: (DeliveryError) -> Void) -> [DeliveryRecord] {
        guard !pushes.isEmpty else { return [] }
        var outcomes = [DeliveryRecord?](repeating: nil, count: pushes.count)
        var pending = Array(pushes.indices)
        var refused: String?
        while !pending.isEmpty {
            let bearer: String
            do {
                bearer = try token(refused)
            } catch {
                tokenFailed(error)
                let verdict = error.transient ? Verdict.retry("AccessTokenError", after: nil, ambiguous: false)
                    : .failed("AccessTokenError", deadToken: false)
                for index in pending { outcomes[index] = verdict.record(for: pushes[index]) }
                break
            }
            let headers = HTTP2HeaderList(["authorization: Bearer \(bearer)", "content-type: application/json"])
            let responses = client.send(pending.map { HTTP2Request(url: url, sharedHeaders: headers, body: pushes[$0].body) })
            var again: [Int] = []
            for (index, response) in zip(pending, responses) {
                let verdict = verdict(response, pushes[index])
                if case .renewCredentials = verdict, refused == nil {
                    again.append(index)
                } else {
                    outcomes[index] = verdict.record(for: pushes[index])
                }
            }
            guard !again.isEmpty else { break }
            refused = bearer
            pending = again
        }
        return pushes.indices.map { outcomes[$0] ?? DeliveryRecord(deviceID: pushes[$0].target.deviceID, outcome: .failed, reason: "Unknown") }
    }
}
