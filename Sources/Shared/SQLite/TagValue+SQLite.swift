import Core

/// How a tag value maps to the `device_tags` columns: a number for comparisons, a text for strings.
extension TagValue {
    /// The number stored in the indexed `num` column, used by comparisons in targeting.
    var storedNumber: SQLiteValue {
        switch self {
        case .integer(let value): return .integer(value)
        case .date(let value): return .integer(value)
        case .boolean(let value): return .integer(value ? 1 : 0)
        case .decimal(let value): return .real(value)
        case .version(let value): return TagVersion.encode(value).map(SQLiteValue.integer) ?? .null
        case .string, .list: return .null
        }
    }

    /// The text stored in the `str` column.
    var storedText: SQLiteValue {
        switch self {
        case .string(let value), .version(let value): return .text(value)
        case .list(let items): return .text(JSON.array(items.map(JSON.string)).text)
        case .integer, .date, .boolean, .decimal: return .null
        }
    }

    /// Rebuilds a value from the stored columns.
    static func fromStorage(type: TagType, number: SQLiteValue, text: String?) -> TagValue? {
        switch (type, number) {
        case (.integer, .integer(let value)): return .integer(value)
        case (.date, .integer(let value)): return .date(value)
        case (.boolean, .integer(let value)): return .boolean(value != 0)
        case (.decimal, .real(let value)): return .decimal(value)
        case (.decimal, .integer(let value)): return .decimal(Double(value))
        case (.string, _): return text.map(TagValue.string)
        case (.version, _): return text.map(TagValue.version)
        case (.list, _):
            guard let text, let items = try? JSON.parse(text).arrayValue else { return nil }
            return .list(items.compactMap(\.stringValue))
        default: return nil
        }
    }
}
