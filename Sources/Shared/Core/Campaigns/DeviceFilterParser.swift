/// Parses Pushwoosh's `devices_filter` language into a `DeviceFilterSyntax`:
///
///     A("ABCDE-12345", ["iOS"]) * (T("City", EQ, "Paris") + T("Level", GTE, 10)) \ T("VIP", EQ, true)
///
/// Sets are `A("CODE")`, `A("CODE", ["iOS", "Android"])`, `T("tag", OP, value)` and
/// `AT("CODE", "tag", OP, value)`; `+` is union, `*` intersection and `\` difference, applied left to
/// right (parentheses group); whitespace may appear between any two tokens. Values are JSON
/// literals: strings in double quotes (`\"` and `\\` escape), numbers, `true`, `false`, `null` and
/// arrays of them; the operator is a bare word (`EQ`) or a string. Any input gives a syntax tree or
/// a `DeviceFilterError` that names the character where it went wrong; the nesting depth, the
/// length and the number of sets are bounded, so no input can exhaust the stack.
public struct DeviceFilterParser {
    public static let maximumLength = 10_000
    public static let maximumDepth = 32
    public static let maximumSets = 100

    private let characters: [Character]
    private var index = 0
    private var depth = 0
    private var sets = 0

    private init(_ text: String) { characters = Array(text) }

    public static func parse(_ text: String) throws(DeviceFilterError) -> DeviceFilterSyntax {
        guard text.count <= maximumLength else { throw DeviceFilterError("is longer than \(maximumLength) characters", at: nil) }
        var parser = DeviceFilterParser(text)
        parser.skipSpace()
        guard !parser.atEnd else { throw DeviceFilterError("is empty", at: nil) }
        let result = try parser.expression()
        parser.skipSpace()
        guard parser.atEnd else { throw parser.failure("expected +, * or \\ between two sets") }
        return result
    }

    // MARK: - Grammar

    /// operand (('+' | '*' | '\') operand)*
    private mutating func expression() throws(DeviceFilterError) -> DeviceFilterSyntax {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else { throw failure("parentheses nest deeper than \(Self.maximumDepth)") }
        var result = try operand()
        while true {
            skipSpace()
            guard let symbol = peek, symbol == "+" || symbol == "*" || symbol == "\\" else { return result }
            index += 1
            let right = try operand()
            switch symbol {
            case "+": result = .union(result, right)
            case "*": result = .intersection(result, right)
            default: result = .difference(result, right)
            }
        }
    }

    /// '(' expression ')' | NAME '(' arguments ')'
    private mutating func operand() throws(DeviceFilterError) -> DeviceFilterSyntax {
        skipSpace()
        guard let next = peek else { throw failure("expected a set (A, T, AT) or \"(\", but the filter ends") }
        if next == "(" {
            index += 1
            let inner = try expression()
            skipSpace()
            guard peek == ")" else { throw failure("expected \")\"") }
            index += 1
            return inner
        }
        let start = index
        let name = word()
        guard !name.isEmpty else { throw failure("expected a set (A, T, AT) or \"(\"") }
        skipSpace()
        guard peek == "(" else { throw failure("expected \"(\" after \(name)") }
        index += 1
        let arguments = try self.arguments()
        sets += 1
        guard sets <= Self.maximumSets else { throw DeviceFilterError("has more than \(Self.maximumSets) sets", at: start) }
        switch name.uppercased() {
        case "A":
            guard (1...2).contains(arguments.count), case .value(.string(let code)) = arguments[0].kind else {
                throw DeviceFilterError("A takes an application code and an optional list of platforms: A(\"CODE\", [\"iOS\"])", at: start)
            }
            guard arguments.count == 2 else { return .app(code: code, platforms: nil, offset: start) }
            guard case .value(.array(let items)) = arguments[1].kind, let names = items.mapAll(\.stringValue) else {
                throw DeviceFilterError("the platforms of A must be a list of names such as [\"iOS\", \"Android\"]", at: arguments[1].start)
            }
            return .app(code: code, platforms: names, offset: start)
        case "T":
            guard (2...3).contains(arguments.count), case .value(.string(let tag)) = arguments[0].kind else {
                throw DeviceFilterError("T takes a tag name, an operator and a value: T(\"tag\", EQ, value)", at: start)
            }
            return .tag(app: nil, condition: try condition(tag, arguments.dropFirst()), offset: start)
        case "AT":
            guard (3...4).contains(arguments.count), case .value(.string(let code)) = arguments[0].kind,
                case .value(.string(let tag)) = arguments[1].kind else {
                throw DeviceFilterError("AT takes an application code, a tag name, an operator and a value: AT(\"CODE\", \"tag\", EQ, value)",
                                        at: start)
            }
            return .tag(app: code, condition: try condition(tag, arguments.dropFirst(2)), offset: start)
        case "G":
            throw DeviceFilterError("G(...) names an application group, which Herald does not have; use A(\"APP-CODE\")", at: start)
        default:
            throw DeviceFilterError("unknown set \(name.prefix(20)); use A, T or AT", at: start)
        }
    }

    /// The `[tag, operator, operand]` array `TagCondition.parse` reads.
    private func condition(_ tag: String, _ rest: ArraySlice<Argument>) throws(DeviceFilterError) -> JSON {
        let op = rest[rest.startIndex]
        let name: String
        switch op.kind {
        case .word(let word): name = word
        case .value(.string(let text)): name = text
        default: throw DeviceFilterError("expected an operator such as EQ, IN or GTE", at: op.start)
        }
        var parts: [JSON] = [.string(tag), .string(name)]
        if let operand = rest.dropFirst().first {
            guard case .value(let value) = operand.kind else {
                throw DeviceFilterError("expected a value (a string in double quotes, a number, true, false or a list)", at: operand.start)
            }
            parts.append(value)
        }
        return .array(parts)
    }

    private struct Argument {
        enum Kind {
            case value(JSON)
            /// A bare word other than true, false and null: an operator.
            case word(String)
        }
        let kind: Kind
        let start: Int
    }

    /// argument (',' argument)* ')' — the opening parenthesis is already read.
    private mutating func arguments() throws(DeviceFilterError) -> [Argument] {
        var arguments: [Argument] = []
        while true {
            skipSpace()
            let start = index
            let word = self.word()
            if !word.isEmpty {
                switch word {
                case "true": arguments.append(Argument(kind: .value(.bool(true)), start: start))
                case "false": arguments.append(Argument(kind: .value(.bool(false)), start: start))
                case "null": arguments.append(Argument(kind: .value(.null), start: start))
                default: arguments.append(Argument(kind: .word(word), start: start))
                }
            } else {
                arguments.append(Argument(kind: .value(try value(allowList: true)), start: start))
            }
            guard arguments.count <= 4 else { throw DeviceFilterError("too many arguments", at: start) }
            skipSpace()
            switch peek {
            case ",": index += 1
            case ")":
                index += 1
                return arguments
            case nil: throw failure("expected \",\" or \")\", but the filter ends")
            default: throw failure("expected \",\" or \")\"")
            }
        }
    }

    /// A string, a number, true/false/null, or (when allowed) a list of them.
    private mutating func value(allowList: Bool) throws(DeviceFilterError) -> JSON {
        skipSpace()
        guard let next = peek else { throw failure("expected a value, but the filter ends") }
        if next == "\"" { return .string(try string()) }
        if next == "[" && allowList {
            index += 1
            var items: [JSON] = []
            skipSpace()
            if peek == "]" {
                index += 1
                return .array(items)
            }
            while true {
                items.append(try value(allowList: false))
                guard items.count <= TagCondition.maximumOperandCount else {
                    throw failure("a list holds more than \(TagCondition.maximumOperandCount) values")
                }
                skipSpace()
                switch peek {
                case ",": index += 1
                case "]":
                    index += 1
                    return .array(items)
                default: throw failure("expected \",\" or \"]\" in a list")
                }
            }
        }
        if next == "-" || next == "+" || next == "." || next.isASCII && next.isNumber { return try number() }
        let start = index
        switch word() {
        case "true": return .bool(true)
        case "false": return .bool(false)
        case "null": return .null
        default:
            index = start
            throw failure(allowList ? "expected a value (a string in double quotes, a number, true, false or a list)"
                                    : "expected a string in double quotes, a number, true or false")
        }
    }

    private mutating func string() throws(DeviceFilterError) -> String {
        let start = index
        index += 1
        var text = ""
        while let next = peek {
            index += 1
            switch next {
            case "\"": return text
            case "\\":
                guard let escaped = peek else { break }
                if escaped == "\"" || escaped == "\\" {
                    text.append(escaped)
                    index += 1
                } else {
                    text.append(next)
                }
            default: text.append(next)
            }
        }
        throw DeviceFilterError("a string is not closed with \"", at: start)
    }

    private mutating func number() throws(DeviceFilterError) -> JSON {
        let start = index
        while let next = peek, next.isASCII, next.isNumber || "+-.eE".contains(next) { index += 1 }
        let text = String(characters[start..<index])
        if let integer = Int64(text) { return .int(integer) }
        if let decimal = Double(text), decimal.isFinite { return .double(decimal) }
        throw DeviceFilterError("\(text.prefix(20)) is not a number", at: start)
    }

    /// A letter or `_`, then letters, digits and `_` (a function name, an operator, true/false/null);
    /// empty if none.
    private mutating func word() -> String {
        let start = index
        guard let first = peek, first.isASCII, first.isLetter || first == "_" else { return "" }
        while let next = peek, next.isASCII, next.isLetter || next.isNumber || next == "_" { index += 1 }
        return String(characters[start..<index])
    }

    // MARK: - Characters

    private var atEnd: Bool { index >= characters.count }
    private var peek: Character? { atEnd ? nil : characters[index] }

    private mutating func skipSpace() {
        while let next = peek, next.isWhitespace { index += 1 }
    }

    private func failure(_ problem: String) -> DeviceFilterError {
        DeviceFilterError(problem, at: index, near: atEnd ? nil : String(characters[index..<min(characters.count, index + 20)]))
    }
}

/// A `devices_filter` that cannot be used: the problem and the character (1-based) where it was found.
public struct DeviceFilterError: Error, Sendable, Equatable, CustomStringConvertible {
    public let problem: String
    /// 1-based character position; nil when the problem is the whole filter.
    public let position: Int?
    public let near: String?

    /// `index` is the 0-based character offset of the problem.
    init(_ problem: String, at index: Int?, near: String? = nil) {
        self.problem = problem
        position = index.map { $0 + 1 }
        self.near = near
    }

    public var description: String {
        guard let position else { return problem }
        let context = near.map { " near \"\($0)\"" } ?? ""
        return "at character \(position)\(context): \(problem)"
    }
}
