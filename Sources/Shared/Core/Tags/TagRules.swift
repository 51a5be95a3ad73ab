/// How raw SDK values become typed tag values, and how operations change them. Pure functions,
/// so the rules are tested without a database.
public enum TagRules {
    /// The longest list item, in UTF-8 bytes: items key PostgreSQL's `device_tag_items` and its
    /// index, whose entries hold at most 2,704 bytes with the application id and a tag name (up to
    /// 128 bytes). Refused alike on both backends.
    public static let maxListItemBytes = 1024

    /// Refuses a list item longer than `maxListItemBytes`; `field` names the tag (`tags.interests`).
    public static func checkListItems(_ items: some Sequence<String>, field: String) throws(TagError) {
        guard items.allSatisfy({ $0.utf8.count <= maxListItemBytes }) else {
            throw TagError("\(field): list items must be at most \(maxListItemBytes) bytes long")
        }
    }

    /// The type a first value defines for a tag that has no definition yet.
    public static func inferType(of value: JSON) -> TagType? {
        switch value {
        case .int: return .integer
        case .double: return .decimal
        case .bool: return .boolean
        case .array: return .list
        case .string(let text): return TagDate.parse(text) != nil && text.count == 16 ? .date : .string
        case .null, .object: return nil
        }
    }

    /// Converts `value` to `type`, accepting the forms the SDKs send (numbers as strings on iOS,
    /// dates as `yyyy-MM-dd HH:mm` or unix seconds, booleans as 0/1). Nil when it does not fit.
    public static func convert(_ value: JSON, to type: TagType) -> TagValue? {
        switch type {
        case .integer:
            return value.lenientInt.map(TagValue.integer)
        case .decimal:
            return value.lenientDouble.flatMap { $0.isFinite ? TagValue.decimal($0) : nil }
        case .boolean:
            return value.lenientBool.map(TagValue.boolean)
        case .string:
            guard let text = value.lenientString ?? value.lenientBool.map({ $0 ? "true" : "false" }) else { return nil }
            return text.utf8.count <= 4096 ? .string(text) : nil
        case .list:
            switch value {
            case .array(let items): return items.mapAll(\.lenientString).map(TagValue.list)
            case .string(let single): return .list([single])
            default: return nil
            }
        case .date:
            if case .string(let text) = value {
                if let seconds = TagDate.parse(text) { return .date(seconds) }
                return Int64(text).map(TagValue.date)
            }
            return value.lenientInt.map(TagValue.date)
        case .version:
            guard let text = value.lenientString, TagVersion.encode(text) != nil else { return nil }
            return .version(text)
        }
    }

    /// The new value of a tag after `operation`; nil means the tag is removed.
    /// `type` is the tag's definition (nil when the tag was never set in this application).
    public static func apply(_ operation: TagUpdate.Operation, name: String, to current: TagValue?,
                             type: TagType?) throws(TagError) -> TagValue? {
        switch operation {
        case .delete:
            return nil
        case .set(let value):
            guard let target = type ?? inferType(of: value) else {
                throw TagError("tags.\(name): unsupported value of type \(value.typeName)")
            }
            guard let converted = convert(value, to: target) else {
                throw TagError("tags.\(name): expected \(target.article) \(target.name) value, found \(value.typeName) \(value.text.prefix(40))")
            }
            if case .list(let items) = converted { try checkListItems(items, field: "tags.\(name)") }
            return converted
        case .increment(let amount):
            switch type ?? (amount.lenientInt != nil ? .integer : .decimal) {
            case .integer:
                guard let step = amount.lenientInt else {
                    throw TagError("tags.\(name): increment of an integer tag needs an integer value")
                }
                var base: Int64 = 0
                if case .integer(let value) = current { base = value }
                let (sum, overflow) = base.addingReportingOverflow(step)
                guard !overflow else { throw TagError("tags.\(name): increment overflows") }
                return .integer(sum)
            case .decimal:
                var base = 0.0
                if case .decimal(let value) = current { base = value }
                return .decimal(base + (amount.lenientDouble ?? 0))
            case let other:
                throw TagError("tags.\(name): increment needs an integer or decimal tag, this one is \(other.name)")
            }
        case .append(let items), .remove(let items):
            let target = type ?? .list
            guard target == .list else {
                throw TagError("tags.\(name): append and remove need a list tag, this one is \(target.name)")
            }
            var list: [String] = []
            if case .list(let existing) = current { list = existing }
            if case .append = operation {
                try checkListItems(items, field: "tags.\(name)")
                for item in items where !list.contains(item) { list.append(item) }
            } else {
                list.removeAll { items.contains($0) }
            }
            return .list(list)
        }
    }
}
