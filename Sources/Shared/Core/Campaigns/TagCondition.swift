/// One `[tag, operator, operand]` condition of a message, already checked against the tag's type.
public struct TagCondition: Sendable, Equatable, Codable {
    public enum Operator: String, Sendable, Codable, CaseIterable {
        case eq = "EQ", notEq = "NOTEQ", inList = "IN", notIn = "NOTIN", gte = "GTE", lte = "LTE", between = "BETWEEN"
        case notSet = "NOTSET", any = "ANY"
    }

    /// A typed operand value, in the stored representation of its tag type.
    public enum Operand: Sendable, Equatable, Codable {
        case number(Double)
        case text(String)
    }

    public var tag: String
    public var type: TagType
    public var op: Operator
    /// One value (EQ, NOTEQ, GTE, LTE), several (IN, NOTIN), two (BETWEEN), none (NOTSET, ANY).
    public var operands: [Operand]

    public init(tag: String, type: TagType, op: Operator, operands: [Operand]) {
        self.tag = tag
        self.type = type
        self.op = op
        self.operands = operands
    }
}

extension TagType: Codable {}
