import Core

/// The public addresses of the pages Herald hosts: `<http.public_url>/rich-media/<app>/<code>.zip`.
/// Without `http.public_url` Herald cannot tell a device where to download a page, so everything
/// that would hand out such an address is refused with `missingPublicURL`.
struct RichMediaLinks: Sendable {
    let publicURL: String?

    static let pathPrefix = "/rich-media/"
    static let missingPublicURL =
        "rich media needs http.public_url (the address devices reach Herald at, e.g. https://push.example.com) in the configuration"

    /// Rich media and in-app codes: what may appear in a URL path unescaped.
    static func isValidCode(_ code: String) -> Bool {
        (1...64).contains(code.utf8.count) && code.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".")
        }
    }

    static let codeRule = "1 to 64 letters, digits, '-', '_' or '.'"

    /// Where devices download the page, or nil without `http.public_url`.
    func url(app: String, code: String) -> String? {
        guard var base = publicURL else { return nil }
        while base.hasSuffix("/") { base.removeLast() }
        return "\(base)\(Self.pathPrefix)\(app)/\(code).zip"
    }

    /// The payload's `rm` for a stored page, or nil without `http.public_url`.
    func link(_ page: RichMediaPage) -> RichMediaLink? {
        url(app: page.app, code: page.code).map { RichMediaLink(url: $0, ts: String(page.version)) }
    }
}
