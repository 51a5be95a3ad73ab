import Core

/// How a tag value maps to the `device_tags` columns: `num` (numeric) for comparisons, `str` for
/// strings, versions as written, and lists as a JSON array (their items are also in
/// `device_tag_items`). Numbers travel as text, so that integers, dates and encoded versions
/// (17 digits) stay exact.
extension TagValue {
    /// The `num` column's value as text, or nil.
    var storedNumber: String? {
        switch self {
        case .integer(let value), .date(let value): return String(value)
        case .boolean(let value): return value ? "1" : "0"
        case .decimal(let value): return "\(value)"
        case .version(let value): return TagVersion.encode(value).map { String($0) }
        case .string, .list: return nil
        }
    }

    /// The `str` column's value, or nil.
    var storedText: String? {
        switch self {
        case .string(let value), .version(let value): return value
        case .list(let items): return JSON.array(items.map(JSON.string)).text
        case .integer, .date, .boolean, .decimal: return nil
        }
    }

    /// Rebuilds a value from a row's `type, num::text, str` columns, the first at `typeColumn`; nil
    /// for an unknown type or a value the type cannot hold.
    static func fromStorage(_ row: PostgresRow, typeColumn: Int32) -> TagValue? {
        TagType(rawValue: Int(row.int(typeColumn))).flatMap {
            fromStorage(type: $0, number: row.optionalText(typeColumn + 1), text: row.optionalText(typeColumn + 2))
        }
    }

    /// Rebuilds a value from the stored columns (`num` read as text).
    static func fromStorage(type: TagType, number: String?, text: String?) -> TagValue? {
        switch type {
        case .integer: return number.flatMap { Int64($0) }.map(TagValue.integer)
        case .date: return number.flatMap { Int64($0) }.map(TagValue.date)
        case .boolean: return number.map { TagValue.boolean($0 != "0") }
        case .decimal: return number.flatMap { Double($0) }.map(TagValue.decimal)
        case .string: return text.map(TagValue.string)
        case .version: return text.map(TagValue.version)
        case .list:
            guard let text, let items = try? JSON.parse(text).arrayValue else { return nil }
            return .list(items.compactMap(\.stringValue))
        }
    }

    /// The tags of several rows as the five parallel arrays a multi-row statement unnests: each
    /// tag's row (counted from 1), name, type, `num` and `str`.
    static func columns(_ rows: [[(name: String, value: TagValue)]]) -> [PostgresValue] {
        var indexes: [Int64] = [], names: [String?] = [], types: [Int64] = [], numbers: [String?] = [], texts: [String?] = []
        for (index, tags) in rows.enumerated() {
            for tag in tags {
                indexes.append(Int64(index + 1))
                names.append(tag.name)
                types.append(Int64(tag.value.type.rawValue))
                numbers.append(tag.value.storedNumber)
                texts.append(tag.value.storedText)
            }
        }
        return [.integers(indexes), .texts(names), .integers(types), .texts(numbers), .texts(texts)]
    }
}
