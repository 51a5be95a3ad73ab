/// A `conditions` entry that cannot be used; the message names the position and the problem,
/// e.g. `conditions[2]: unknown operator "LIKE"`.
public struct ConditionError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension TagCondition {
    /// The built-in string tag that targets the device's `language` column instead of `device_tags`
    /// (name compared case-sensitively).
    public static let languageTag = "Language"

    /// `zh-Hans` → `zh`, `en_US` → `en`: the lower-cased code before any region or script.
    public static func baseLanguage(_ code: String) -> String {
        String(code.lowercased().split(whereSeparator: { $0 == "-" || $0 == "_" }).first ?? "")
    }

    /// The most values an IN or NOTIN operand may list.
    public static let maximumOperandCount = 1000

    /// Parses one `[tagName, operator, operand]` condition of `createMessage` at `conditions[index]`,
    /// checking the operator and operand against the tag's type as `tagType` reports it (nil: the
    /// tag is not defined in this application). `Language` is always a string tag and `tagType` is
    /// not asked about it. The operand may be absent, and is ignored, for NOTSET and ANY.
    ///
    /// Operands are normalised: numbers, booleans (0/1), dates (unix seconds, UTC) and versions
    /// (`TagVersion.encode`) become `.number`, strings and list items `.text`.
    ///
    /// Dates accept `"YYYY-MM-DD HH:mm"`, `"YYYY-MM-DD"`, unix seconds, or `"N days ago"` (counted
    /// back from `now`). EQ, NOTEQ, IN and NOTIN on a date compare by UTC calendar day: each operand
    /// is reduced to the start D of its UTC day and matches stored values in [D, D + 86400).
    /// GTE, LTE and BETWEEN compare instants.
    public static func parse(_ json: JSON, index: Int, tagType: (String) -> TagType?,
                             now: Int64) throws(ConditionError) -> TagCondition {
        func failure(_ message: String) -> ConditionError { ConditionError("conditions[\(index)]: \(message)") }
        guard case .array(let parts) = json, (2...3).contains(parts.count) else {
            throw failure("a condition must be an array [tag, operator, operand]")
        }
        guard case .string(let tag) = parts[0], !tag.isEmpty else { throw failure("the tag name must be a non-empty string") }
        guard case .string(let name) = parts[1] else { throw failure("the operator must be a string, found \(parts[1].typeName)") }
        guard let op = Operator(rawValue: name.uppercased()) else { throw failure("unknown operator \"\(name)\"") }
        let type: TagType
        if tag == languageTag {
            type = .string
        } else if let defined = tagType(tag) {
            type = defined
        } else {
            throw failure("tag \"\(tag)\" is not defined in this application")
        }
        if op == .notSet || op == .any { return TagCondition(tag: tag, type: type, op: op, operands: []) }
        guard supports(type, op) else {
            throw failure("operator \(op.rawValue) does not apply to tag \"\(tag)\" of type \(type.name)")
        }
        guard parts.count == 3 else { throw failure("operator \(op.rawValue) needs an operand") }
        let operand = parts[2]
        let scalar = Scalar(type, now: now)
        func mismatch(_ expected: String) -> ConditionError {
            failure("tag \"\(tag)\" is \(type.name); operand must be \(expected)")
        }

        var operands: [Operand]
        switch op {
        case .eq, .notEq, .gte, .lte:
            guard let value = scalar.convert(operand) else { throw mismatch(scalar.single) }
            operands = [value]
        case .inList, .notIn:
            let expected = type == .list ? "a string or an array of strings" : "an array of \(scalar.plural)"
            let items: [JSON]
            if case .array(let array) = operand {
                items = array
            } else if type == .list {
                items = [operand]
            } else {
                throw mismatch(expected)
            }
            guard !items.isEmpty else { throw failure("the operand of \(op.rawValue) must not be empty") }
            guard items.count <= maximumOperandCount else {
                throw failure("the operand of \(op.rawValue) has \(items.count) items; at most \(maximumOperandCount) are allowed")
            }
            guard let values = items.mapAll(scalar.convert) else { throw mismatch(expected) }
            operands = values
        case .between:
            guard case .array(let bounds) = operand, bounds.count == 2, let values = bounds.mapAll(scalar.convert),
                case .number(let low) = values[0], case .number(let high) = values[1]
            else { throw mismatch("[min, max] with two \(scalar.plural)") }
            guard low <= high else { throw failure("BETWEEN needs min <= max, found \(operand.text)") }
            operands = values
        case .notSet, .any:
            operands = []
        }
        if type == .date, op == .eq || op == .notEq || op == .inList || op == .notIn {
            operands = operands.map { operand in
                guard case .number(let seconds) = operand else { return operand }
                return .number(startOfDay(seconds))
            }
        }
        if tag == languageTag {
            // Devices register `zh-Hans`, `pt-BR` or `en_US`; the Language tag is the base code.
            return TagCondition(tag: tag, type: type, op: op, operands: operands.map { operand in
                guard case .text(let text) = operand else { return operand }
                return .text(baseLanguage(text))
            })
        }
        return TagCondition(tag: tag, type: type, op: op, operands: operands)
    }

    /// Whether `op` (other than NOTSET and ANY, which every type supports) applies to `type`.
    package static func supports(_ type: TagType, _ op: Operator) -> Bool {
        switch type {
        case .string: return [.eq, .notEq, .inList, .notIn].contains(op)
        case .boolean: return op == .eq
        case .list: return [.eq, .inList, .notIn].contains(op)
        case .integer, .decimal, .date, .version: return true
        }
    }

    /// The start of the UTC day holding `seconds`.
    package static func startOfDay(_ seconds: Double) -> Double { (seconds / 86_400).rounded(.down) * 86_400 }

    /// How one operand value of a type is read, and how to describe it in errors.
    private struct Scalar {
        let single: String
        let plural: String
        let convert: (JSON) -> Operand?

        init(_ type: TagType, now: Int64) {
            switch type {
            case .string, .list:
                (single, plural) = ("a string", "strings")
                convert = { value in
                    if case .bool(let flag) = value { return .text(flag ? "true" : "false") }
                    return value.lenientString.map(Operand.text)
                }
            case .integer, .decimal:
                (single, plural) = ("a number", "numbers")
                convert = { value in value.lenientDouble.flatMap { $0.isFinite ? .number($0) : nil } }
            case .boolean:
                (single, plural) = ("0, 1, true or false", "booleans")
                convert = { value in value.lenientBool.map { .number($0 ? 1 : 0) } }
            case .date:
                let forms = "(\"YYYY-MM-DD HH:mm\", \"YYYY-MM-DD\", unix seconds or \"N days ago\")"
                (single, plural) = ("a date \(forms)", "dates \(forms)")
                convert = { value in Scalar.date(value, now: now).map { .number(Double($0)) } }
            case .version:
                (single, plural) = ("a version such as \"1.2.3\"", "versions such as \"1.2.3\"")
                convert = { value in
                    let text: String
                    switch value {
                    case .string(let string): text = string
                    case .int(let number): text = String(number)
                    default: return nil
                    }
                    // Beyond 2^53 a Double no longer holds every encoded version exactly.
                    guard let encoded = TagVersion.encode(text), encoded <= 1 << 53 else { return nil }
                    return .number(Double(encoded))
                }
            }
        }

        /// Unix seconds from a date string, a timestamp (number or numeric string) or `N days ago`.
        static func date(_ value: JSON, now: Int64) -> Int64? {
            let seconds: Int64?
            if case .string(let text) = value {
                seconds = TagDate.parse(text) ?? Int64(text.trimmingSpaces) ?? daysAgo(text, now: now)
            } else {
                seconds = value.lenientInt
            }
            guard let seconds, (-100_000_000_000...100_000_000_000).contains(seconds) else { return nil }
            return seconds
        }

        /// `now` minus N days for `"N days ago"` (also `"1 day ago"`), case-insensitive.
        static func daysAgo(_ text: String, now: Int64) -> Int64? {
            let words = text.lowercased().split(separator: " ")
            guard words.count == 3, words[1] == "days" || words[1] == "day", words[2] == "ago",
                let days = Int64(words[0]), (0...1_000_000).contains(days)
            else { return nil }
            return now - days * 86_400
        }
    }
}
