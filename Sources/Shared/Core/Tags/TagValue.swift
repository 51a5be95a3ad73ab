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
}
