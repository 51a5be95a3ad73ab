import Core

/// A compact JWS (`header.claims.signature`, base64url parts) taken apart, before any check of its
/// signature: what the edge reads from an APNs provider token or an OAuth assertion.
struct CompactJWS {
    let header: JSON
    let claims: JSON
    /// `header.claims` as sent: the signed bytes.
    let signingInput: ArraySlice<UInt8>
    let signature: [UInt8]

    /// Nil when `token` is not three base64url parts whose first two are JSON objects.
    init?(_ token: String) {
        let bytes = Array(token.utf8)
        guard let firstDot = bytes.firstIndex(of: UInt8(ascii: ".")),
            let secondDot = bytes[(firstDot + 1)...].firstIndex(of: UInt8(ascii: ".")),
            !bytes[(secondDot + 1)...].contains(UInt8(ascii: "."))
        else { return nil }
        func part(_ range: Range<Int>) -> [UInt8]? { Base64URL.decode(String(decoding: bytes[range], as: UTF8.self)) }
        guard let headerBytes = part(0..<firstDot), let claimBytes = part((firstDot + 1)..<secondDot),
            let signature = part((secondDot + 1)..<bytes.count),
            let header = try? JSON.parse(headerBytes), header.objectValue != nil,
            let claims = try? JSON.parse(claimBytes), claims.objectValue != nil
        else { return nil }
        self.header = header
        self.claims = claims
        signingInput = bytes[0..<secondDot]
        self.signature = signature
    }

    /// A whole-number claim (`iat`, `exp`), or nil.
    func time(_ claim: String) -> Int64? {
        switch claims[claim] {
        case .int(let value)?: return value
        case .double(let value)? where value.isFinite: return Int64(value)
        default: return nil
        }
    }
}
