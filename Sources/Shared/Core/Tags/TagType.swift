/// Pushwoosh's seven tag types, with their numeric codes.
public enum TagType: Int, Sendable, CaseIterable {
    case integer = 1
    case string = 2
    case list = 3
    case date = 4
    case boolean = 5
    case decimal = 6
    case version = 7

    /// "a" or "an", for messages.
    public var article: String { self == .integer ? "an" : "a" }

    public var name: String {
        switch self {
        case .integer: return "integer"
        case .string: return "string"
        case .list: return "list"
        case .date: return "date"
        case .boolean: return "boolean"
        case .decimal: return "decimal"
        case .version: return "version"
        }
    }
}
