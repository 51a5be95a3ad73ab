/// Where the database is, as logs name it.
extension DatabaseSettings {
    /// The log key and value naming the database: `database.url` without its password (in the user
    /// part or as a `password` parameter), or `database.path`.
    public var location: (key: String, value: String) {
        guard let url else { return ("database.path", path) }
        return ("database.url", Self.withoutPassword(url))
    }

    /// `url` with the password of its user part and of a `password=` parameter removed.
    static func withoutPassword(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        var head = String(url[..<scheme.upperBound])
        var rest = Substring(url[scheme.upperBound...])
        // The authority ends at the first '/' or '?'; its user information at its last '@'.
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        if let at = rest[..<authorityEnd].lastIndex(of: "@") {
            let user = rest[..<at]
            head += user.firstIndex(of: ":").map { String(user[..<$0]) } ?? String(user)
            rest = rest[at...]
        }
        guard let query = rest.firstIndex(of: "?") else { return head + rest }
        let parameters = rest[rest.index(after: query)...].split(separator: "&", omittingEmptySubsequences: false)
            .filter { !$0.lowercased().hasPrefix("password=") }
        return head + rest[..<query] + (parameters.isEmpty ? "" : "?" + parameters.joined(separator: "&"))
    }
}
