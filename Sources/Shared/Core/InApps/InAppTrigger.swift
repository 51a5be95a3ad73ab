/// When an in-app is shown: a `postEvent` with this event name whose attributes meet every
/// condition (an empty list matches any attributes).
public struct InAppTrigger: Sendable, Equatable, Codable {
    public var event: String
    public var conditions: [AttributeCondition]

    public init(event: String, conditions: [AttributeCondition] = []) {
        self.event = event
        self.conditions = conditions
    }

    /// Whether an event with these attributes triggers the in-app (the name is matched by the store).
    public func matches(_ attributes: [String: JSON]) -> Bool {
        conditions.allSatisfy { $0.matches(attributes[$0.attribute]) }
    }
}

/// One `[attribute, operator, operand]` condition on a `postEvent`'s attributes. Numbers compare as
/// numbers whichever way they arrive (the iOS SDK sends them as strings); anything else compares
/// as text, and booleans as `true`/`false`.
public struct AttributeCondition: Sendable, Equatable, Codable {
    public enum Operator: String, Sendable, Codable, CaseIterable {
        case eq = "EQ", notEq = "NOTEQ", inList = "IN", notIn = "NOTIN", gte = "GTE", lte = "LTE", between = "BETWEEN"
        case notSet = "NOTSET", any = "ANY"

        /// How many operands the operator takes: nil for "one or more" (IN, NOTIN).
        public var operandCount: Int? {
            switch self {
            case .eq, .notEq, .gte, .lte: return 1
            case .between: return 2
            case .notSet, .any: return 0
            case .inList, .notIn: return nil
            }
        }
    }

    public var attribute: String
    public var op: Operator
    /// Scalars (strings, numbers, booleans) as the API gave them.
    public var operands: [JSON]

    public init(attribute: String, op: Operator, operands: [JSON]) {
        self.attribute = attribute
        self.op = op
        self.operands = operands
    }

    /// Whether an attribute value (nil when the event lacks it) meets the condition. Only NOTSET
    /// matches a missing or null attribute.
    public func matches(_ value: JSON?) -> Bool {
        guard let value, value != .null else { return op == .notSet }
        switch op {
        case .notSet: return false
        case .any: return true
        case .eq: return operands.first.map { Self.equal(value, $0) } ?? false
        case .notEq: return operands.first.map { !Self.equal(value, $0) } ?? false
        case .inList: return operands.contains { Self.equal(value, $0) }
        case .notIn: return !operands.contains { Self.equal(value, $0) }
        case .gte: return operands.first.flatMap { Self.compare(value, $0) }.map { $0 >= 0 } ?? false
        case .lte: return operands.first.flatMap { Self.compare(value, $0) }.map { $0 <= 0 } ?? false
        case .between:
            guard operands.count == 2, let low = Self.compare(value, operands[0]), let high = Self.compare(value, operands[1]) else { return false }
            return low >= 0 && high <= 0
        }
    }

    static func equal(_ value: JSON, _ operand: JSON) -> Bool {
        if let order = compare(value, operand) { return order == 0 }
        return text(value) == text(operand)
    }

    /// -1, 0 or 1 when both are numbers; else nil.
    static func compare(_ value: JSON, _ operand: JSON) -> Int? {
        guard let left = number(value), let right = number(operand) else { return nil }
        return left < right ? -1 : (left > right ? 1 : 0)
    }

    static func number(_ value: JSON) -> Double? {
        if case .bool = value { return nil }
        return value.lenientDouble
    }

    static func text(_ value: JSON) -> String? {
        if case .bool(let flag) = value { return flag ? "true" : "false" }
        return value.lenientString
    }
}

extension AttributeCondition {
    /// The API's and the store's form: `[attribute, operator, operand]`, the operand an array for
    /// IN, NOTIN and BETWEEN and absent (or ignored) for NOTSET and ANY.
    public var json: JSON {
        switch op.operandCount {
        case 0: return [.string(attribute), .string(op.rawValue)]
        case 1: return [.string(attribute), .string(op.rawValue), operands.first ?? .null]
        default: return [.string(attribute), .string(op.rawValue), .array(operands)]
        }
    }

    /// Reads the `json` form; the error says what is wrong, for a message naming the field.
    public init(json: JSON) throws(ConditionError) {
        guard let items = json.arrayValue, (2...3).contains(items.count), let attribute = items[0].stringValue, !attribute.isEmpty,
              let name = items[1].stringValue else {
            throw ConditionError("must be [attribute, operator, operand] with a non-empty attribute name")
        }
        guard let op = Operator(rawValue: name.uppercased()) else {
            throw ConditionError("unknown operator \(name.prefix(32)); use one of \(Operator.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        let operand = items.count == 3 ? items[2] : JSON.null
        let operands: [JSON]
        switch op.operandCount {
        case 0: operands = []
        case 1:
            guard Self.isScalar(operand) else { throw ConditionError("\(op.rawValue) takes one string, number or boolean") }
            operands = [operand]
        case 2:
            guard let pair = operand.arrayValue, pair.count == 2, pair.allSatisfy({ AttributeCondition.number($0) != nil }) else {
                throw ConditionError("BETWEEN takes [min, max] numbers")
            }
            operands = pair
        default:
            guard let list = operand.arrayValue, !list.isEmpty, list.allSatisfy(Self.isScalar) else {
                throw ConditionError("\(op.rawValue) takes a non-empty array of strings, numbers or booleans")
            }
            operands = list
        }
        self.init(attribute: attribute, op: op, operands: operands)
    }

    /// Reads a condition the API is given: the `json` form, refused also when it could never
    /// match or carries what its operator has no use for (an operand for NOTSET or ANY, a GTE, LTE
    /// or BETWEEN bound that is no finite number, BETWEEN's min above its max). Stored conditions
    /// are read with `init(json:)`: one accepted before these rules keeps its meaning.
    public init(checking json: JSON) throws(ConditionError) {
        try self.init(json: json)
        switch op {
        case .notSet, .any:
            guard json.arrayValue?.count == 2 else { throw ConditionError("\(op.rawValue) takes no operand: [attribute, \"\(op.rawValue)\"]") }
        case .gte, .lte:
            guard Self.bound(operands[0]) != nil else {
                throw ConditionError("\(op.rawValue) takes one number (or a string holding one), found \(operands[0].text.prefix(64))")
            }
        case .between:
            guard let low = Self.bound(operands[0]), let high = Self.bound(operands[1]) else {
                throw ConditionError("BETWEEN takes [min, max] finite numbers")
            }
            guard low <= high else { throw ConditionError("BETWEEN takes [min, max] with min ≤ max, found [\(operands[0].text), \(operands[1].text)]") }
        case .eq, .notEq, .inList, .notIn: break
        }
    }

    /// A GTE, LTE or BETWEEN bound: a finite number (NaN and infinities match nothing useful).
    static func bound(_ value: JSON) -> Double? { number(value).flatMap { $0.isFinite ? $0 : nil } }

    static func isScalar(_ value: JSON) -> Bool {
        switch value {
        case .string, .int, .double, .bool: return true
        default: return false
        }
    }
}

extension InAppTrigger {
    /// `{"event": …, "conditions": [[…], …]}`.
    public var json: JSON { ["event": .string(event), "conditions": .array(conditions.map(\.json))] }
}
