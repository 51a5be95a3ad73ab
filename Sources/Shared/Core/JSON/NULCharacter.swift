/// Where a request holds U+0000 (NUL), which Herald refuses in every string and key its HTTP APIs
/// accept: PostgreSQL's text cannot hold it, and SQLite's ends at it (a hwid `h\0z` would be
/// stored as `h`, another device's id).
public struct NULCharacter: Error, Sendable, Equatable, CustomStringConvertible {
    /// The field that holds it (`tags.nm`, `notifications[0].content`); for a key, the object whose
    /// key it is (empty at the top level).
    public let field: String
    public let inKey: Bool

    public init(field: String, inKey: Bool) {
        self.field = field
        self.inKey = inKey
    }

    public var description: String {
        guard inKey else { return "\(field) must not contain the NUL character (U+0000)" }
        return field.isEmpty ? "a field name must not contain the NUL character (U+0000)"
            : "the keys of \(field) must not contain the NUL character (U+0000)"
    }

    /// The first of `fields` (in name order) whose name or value holds NUL, named as in a JSON
    /// object of those fields; nil when none does.
    public static func first(in fields: [String: String]) -> NULCharacter? {
        JSON.object(fields.mapValues(JSON.string)).nulCharacter
    }
}

extension JSON {
    /// The first string or object key in this value (keys in sorted order) that holds NUL, named by
    /// its path from this value; nil when none does.
    public var nulCharacter: NULCharacter? { nulCharacter(under: "") }

    /// The same, named by its path from the field `path` that holds this value (`tags`: `tags.nm`).
    public func nulCharacter(under path: String) -> NULCharacter? { holdsNUL ? firstNUL(at: path) : nil }

    /// Whether any string or key holds NUL: the common answer, no, without building paths.
    private var holdsNUL: Bool {
        switch self {
        case .string(let text): return text.utf8.contains(0)
        case .array(let items): return items.contains { $0.holdsNUL }
        case .object(let members): return members.contains { $0.key.utf8.contains(0) || $0.value.holdsNUL }
        case .null, .bool, .int, .double: return false
        }
    }

    private func firstNUL(at path: String) -> NULCharacter? {
        switch self {
        case .string(let text):
            return text.utf8.contains(0) ? NULCharacter(field: path, inKey: false) : nil
        case .array(let items):
            for (index, item) in items.enumerated() {
                if let found = item.firstNUL(at: "\(path)[\(index)]") { return found }
            }
            return nil
        case .object(let members):
            for key in members.keys.sorted() {
                if key.utf8.contains(0) { return NULCharacter(field: path, inKey: true) }
                if let found = members[key]!.firstNUL(at: path.isEmpty ? key : "\(path).\(key)") { return found }
            }
            return nil
        case .null, .bool, .int, .double: return nil
        }
    }
}
