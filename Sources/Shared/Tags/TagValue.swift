/// A typed tag value as stored for one device.
public enum TagValue: Sendable, Equatable {
    case integer(Int64)
    case string(String)
    case list([String])
    /// Unix seconds (UTC).
    case date(Int64)
    case boolean(Bool)
    case decimal(Double)
    /// A dotted version such as `2.10.1`, kept as written.
    case version(String)

    public var type: TagType {
        switch self {
        case .integer: return .integer
        case .string: return .string
        case .list: return .list
        case .date: return .date
        case .boolean: return .boolean
        case .decimal: return .decimal
        case .version: return .version
        }
    }

    /// The value as `getTags` returns it: numbers as numbers, lists as arrays, dates as
    /// `yyyy-MM-dd HH:mm` (UTC), booleans as booleans.
    public var json: JSON {
        switch self {
        case .integer(let value): return .int(value)
        case .string(let value): return .string(value)
        case .list(let items): return .array(items.map(JSON.string))
        case .date(let seconds): return .string(TagDate.format(seconds))
        case .boolean(let value): return .bool(value)
        case .decimal(let value): return .double(value)
        case .version(let value): return .string(value)
        }
    }

    /// The number stored in the indexed `num` column, used by comparisons in targeting.
    public var storedNumber: SQLiteValue {
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
    public var storedText: SQLiteValue {
        switch self {
        case .string(let value), .version(let value): return .text(value)
        case .list(let items): return .text(JSON.array(items.map(JSON.string)).text)
        case .integer, .date, .boolean, .decimal: return .null
        }
    }

    /// Rebuilds a value from the stored columns.
    public static func fromStorage(type: TagType, number: SQLiteValue, text: String?) -> TagValue? {
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
