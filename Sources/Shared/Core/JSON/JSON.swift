/// A JSON value that keeps the distinction between integers, decimals and booleans,
/// which the Pushwoosh SDKs rely on (iOS sends numbers as strings, Android as numbers).
public enum JSON: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([String: JSON])

    public subscript(key: String) -> JSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var isNull: Bool { self == .null }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var objectValue: [String: JSON]? {
        if case .object(let members) = self { return members }
        return nil
    }

    public var arrayValue: [JSON]? {
        if case .array(let items) = self { return items }
        return nil
    }

    /// An integer from a JSON integer, an integral decimal, or a string holding one
    /// (the iOS SDK sends `timezone` and event attributes as strings).
    public var lenientInt: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value) where value.rounded() == value && abs(value) < 9.0e15: return Int64(value)
        case .string(let text): return Int64(text.trimmingSpaces)
        default: return nil
        }
    }

    /// A number from a JSON number or a numeric string.
    public var lenientDouble: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        case .string(let text): return Double(text.trimmingSpaces)
        default: return nil
        }
    }

    /// A boolean from `true`/`false`, `0`/`1`, or their string forms.
    public var lenientBool: Bool? {
        switch self {
        case .bool(let value): return value
        case .int(0): return false
        case .int(1): return true
        case .string(let text):
            switch text.lowercased() {
            case "true", "1": return true
            case "false", "0": return false
            default: return nil
            }
        default: return nil
        }
    }

    /// A string from a JSON string, or the decimal text of a number.
    public var lenientString: String? {
        switch self {
        case .string(let value): return value
        case .int(let value): return String(value)
        case .double(let value): return JSON.format(value)
        default: return nil
        }
    }

    /// Short name of the JSON type, used in error messages.
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    static func format(_ value: Double) -> String {
        if value.rounded() == value && abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}

extension JSON: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    public init(nilLiteral: ()) { self = .null }
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

extension String {
    var trimmingSpaces: Substring {
        var slice = Substring(self)
        while let first = slice.first, first == " " { slice.removeFirst() }
        while let last = slice.last, last == " " { slice.removeLast() }
        return slice
    }
}
