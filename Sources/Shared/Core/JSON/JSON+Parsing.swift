/// Why a body is not valid JSON, with the byte offset where parsing stopped.
public struct JSONParseError: Error, Sendable, CustomStringConvertible {
    public let offset: Int
    public let reason: String
    public var description: String { "invalid JSON at byte \(offset): \(reason)" }
}

extension JSON {
    /// Parses one JSON document (RFC 8259). Nesting is limited to 64 levels so that a hostile
    /// body cannot exhaust the stack.
    @inlinable
    public static func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSON {
        var holdsNUL = false
        return try parse(bytes, holdsNUL: &holdsNUL)
    }

    /// Parses as `parse(_:)` does, and sets `holdsNUL` when a string or key of the document holds
    /// U+0000 (which only the escape `\u0000` can write), so that a caller that refuses NUL looks
    /// for it (`nulCharacter`) only then.
    @inlinable
    public static func parse(_ bytes: some Collection<UInt8>, holdsNUL: inout Bool) throws(JSONParseError) -> JSON {
        let (value, found) = try withContiguous(bytes, parseDocument)
        holdsNUL = found
        return value
    }

    /// A document read for one member of its outermost object (`parse(_:member:)`), and what the
    /// parser noticed in it.
    public struct ParsedMember: Sendable {
        /// The document is an object.
        public let isObject: Bool
        /// The members of the member's value, when that value is an object (the last value, when
        /// the document names the member more than once).
        public let members: JSONMembers?
        /// A string or key of the document holds U+0000 (see `parse(_:holdsNUL:)`).
        public let holdsNUL: Bool
        /// An object of the document names a member more than once; true also, rarely, when two
        /// names of the outermost object only share a fingerprint (`NameFingerprint`), so a
        /// caller may only take a slower path for it.
        public let repeatsKey: Bool
        /// Where the member's value sits in the bytes, when the document is an object that has it.
        public let located: Range<Int>?
    }

    /// Checks that `bytes` hold one JSON document, as `parse(_:)` does, and keeps of it only the
    /// value of its outermost object's member `member`, when that is an object: its members, in
    /// the order sent, and where its text lies, so that a caller can keep that text as sent.
    @inlinable
    public static func parse(_ bytes: some Collection<UInt8>, member: String) throws(JSONParseError) -> ParsedMember {
        try withContiguous(bytes) { (buffer) throws(JSONParseError) in try parseDocument(buffer, keeping: member) }
    }

    /// Calls `body` with `bytes` in contiguous memory, copied first only when they are not. Inlined
    /// where it is called, so that a request's `[UInt8]` body reaches the parser without a generic
    /// call, which would look up the metadata of its result's type on every call.
    @inlinable
    static func withContiguous<T>(_ bytes: some Collection<UInt8>,
                                  _ body: (UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> T) throws(JSONParseError) -> T {
        func run(_ buffer: UnsafeBufferPointer<UInt8>) -> Result<T, JSONParseError> {
            Result { () throws(JSONParseError) in try body(buffer) }
        }
        return try (bytes.withContiguousStorageIfAvailable(run) ?? Array(bytes).withUnsafeBufferPointer(run)).get()
    }

    /// The document in `bytes`, and whether a string or key of it holds U+0000.
    @usableFromInline
    static func parseDocument(_ bytes: UnsafeBufferPointer<UInt8>) throws(JSONParseError) -> (JSON, holdsNUL: Bool) {
        var parser = JSONParser(bytes: bytes)
        return (try parser.parseDocument(), parser.holdsNUL)
    }

    /// `parse(_:member:)` over `bytes`.
    @usableFromInline
    static func parseDocument(_ bytes: UnsafeBufferPointer<UInt8>, keeping member: String) throws(JSONParseError) -> ParsedMember {
        var parser = JSONParser(bytes: bytes)
        let (isObject, members) = try parser.parseDocument(keeping: member)
        return ParsedMember(isObject: isObject, members: members, holdsNUL: parser.holdsNUL,
                            repeatsKey: parser.repeatsKey, located: parser.located)
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSON {
        try parse(text.utf8)
    }
}

/// Reads `bytes`, which stay valid while it parses.
private struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0
    /// Whether a decoded string holds U+0000.
    var holdsNUL = false
    /// Whether an object names a member more than once.
    var repeatsKey = false
    /// Where the value of the member `parseDocument(keeping:)` keeps lies.
    var located: Range<Int>?

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    mutating func parseDocument() throws(JSONParseError) -> JSON {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected data after the value") }
        return value
    }

    /// Parses a document and keeps the members of its outermost object's member `member`, when
    /// the document is an object and that member's value is one; the other values are checked and
    /// dropped.
    mutating func parseDocument(keeping member: String) throws(JSONParseError) -> (isObject: Bool, members: JSONMembers?) {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else {
            _ = try parseDocument()
            return (false, nil)
        }
        var kept: JSONMembers?
        // The fingerprints of the outermost object's names, to notice a repeated one: two names
        // with one fingerprint only cost the caller the path for repeated names. The first needs
        // no array (a request body names one member).
        var first: UInt64?
        var others: [UInt64] = []
        try readObject { (parser: inout JSONParser, key: String) throws(JSONParseError) in
            let fingerprint = NameFingerprint.of(key)
            if fingerprint == first || others.contains(fingerprint) {
                parser.repeatsKey = true
            } else if first == nil {
                first = fingerprint
            } else {
                others.append(fingerprint)
            }
            let start = parser.index
            if key == member {
                if parser.bytes[parser.index] == UInt8(ascii: "{") {
                    kept = try parser.parseMembers()
                } else {
                    _ = try parser.parseValue()
                    kept = nil
                }
                parser.located = start..<parser.index
            } else {
                _ = try parser.parseValue()
            }
        }
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected data after the value") }
        return (true, kept)
    }

    /// Reads a member's name and its colon, and the whitespace after it.
    mutating func parseMemberName() throws(JSONParseError) -> String {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
        let key = try parseString()
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
        index += 1
        skipWhitespace()
        guard index < bytes.count else { throw fail("unexpected end of input") }
        return key
    }

    /// Reads what follows a member or an item: true after `closing`, false after a comma.
    mutating func endOfMember(closing: UInt8) throws(JSONParseError) -> Bool {
        skipWhitespace()
        guard index < bytes.count else { throw fail("unexpected end of input") }
        if bytes[index] == UInt8(ascii: ",") { index += 1; return false }
        if bytes[index] == closing { index += 1; return true }
        throw fail(closing == UInt8(ascii: "}") ? "expected ',' or '}'" : "expected ',' or ']'")
    }

    /// An object (at `index`) as its members in the order sent.
    mutating func parseMembers() throws(JSONParseError) -> JSONMembers {
        var members = JSONMembers(capacity: 16)
        try readObject { (parser: inout JSONParser, key: String) throws(JSONParseError) in
            if !members.set(try parser.parseValue(), for: key) { parser.repeatsKey = true }
        }
        return members
    }

    /// Reads an object (at `index`): `member` gets each member's name, with the parser at its
    /// value, which it reads.
    mutating func readObject(_ member: (inout JSONParser, String) throws(JSONParseError) -> Void) throws(JSONParseError) {
        try enter()
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
        } else {
            while true {
                let key = try parseMemberName()
                try member(&self, key)
                if try endOfMember(closing: UInt8(ascii: "}")) { break }
            }
        }
        depth -= 1
    }

    func fail(_ reason: String) -> JSONParseError { JSONParseError(offset: index, reason: reason) }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    mutating func parseValue() throws(JSONParseError) -> JSON {
        guard index < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end of input") }
        let matches = literal.withUTF8Buffer { expected in
            (0..<count).allSatisfy { bytes[index + $0] == expected[$0] }
        }
        guard matches else { throw fail("invalid literal") }
        index += count
    }

    mutating func enter() throws(JSONParseError) {
        depth += 1
        guard depth <= 64 else { throw fail("nesting deeper than 64 levels") }
    }

    mutating func parseObject() throws(JSONParseError) -> JSON {
        // Room for a typical SDK request object, so that it is not rehashed as it grows.
        var members = [String: JSON](minimumCapacity: 8)
        try readObject { (parser: inout JSONParser, key: String) throws(JSONParseError) in
            if members.updateValue(try parser.parseValue(), forKey: key) != nil { parser.repeatsKey = true }
        }
        return .object(members)
    }

    mutating func parseArray() throws(JSONParseError) -> JSON {
        try enter()
        index += 1
        var items: [JSON] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
        } else {
            while true {
                skipWhitespace()
                items.append(try parseValue())
                if try endOfMember(closing: UInt8(ascii: "]")) { break }
            }
        }
        depth -= 1
        return .array(items)
    }

    mutating func parseString() throws(JSONParseError) -> String {
        let start = index + 1
        // Fast path: no escapes. Eight bytes at a time while none of them can end the run (a
        // quote, a backslash or a control character), then byte by byte.
        if let base = bytes.baseAddress {
            var end = start
            while end + 8 <= bytes.count, !JSON.mayNeedEscape(UnsafeRawPointer(base + end).loadUnaligned(as: UInt64.self)) {
                end += 8
            }
            while end < bytes.count {
                let byte = base[end]
                if byte == UInt8(ascii: "\"") {
                    index = end + 1
                    return String(utf8: UnsafeRawBufferPointer(start: base + start, count: end - start))
                }
                if byte == UInt8(ascii: "\\") { break }
                if byte < 0x20 {
                    index = end
                    throw fail("control character in string")
                }
                end += 1
            }
            index = end
        } else {
            index = start
        }
        var scalars = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return String(decoding: scalars, as: UTF8.self)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unexpected end of input") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): scalars.append(0x22)
                case UInt8(ascii: "\\"): scalars.append(0x5C)
                case UInt8(ascii: "/"): scalars.append(0x2F)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try parseHex4()
                    if (0xD800...0xDBFF).contains(code) {
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
                            bytes[index + 1] == UInt8(ascii: "u")
                        else { throw fail("unpaired surrogate") }
                        index += 2
                        let low = try parseHex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(code) {
                        throw fail("unpaired surrogate")
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw fail("invalid code point") }
                    if code == 0 { holdsNUL = true }
                    scalars.append(contentsOf: Array(String(Character(scalar)).utf8))
                default:
                    throw fail("invalid escape")
                }
            default:
                if byte < 0x20 { throw fail("control character in string") }
                scalars.append(byte)
                index += 1
            }
        }
        throw fail("unterminated string")
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("unexpected end of input") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw fail("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    mutating func parseNumber() throws(JSONParseError) -> JSON {
        let start = index
        var isInteger = true
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
        // An integer of up to 18 digits is read as it is scanned, without a string.
        var magnitude: Int64 = 0
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            while index < bytes.count, isDigit(bytes[index]) {
                magnitude = magnitude &* 10 &+ Int64(bytes[index] &- UInt8(ascii: "0"))
                index += 1
            }
        }
        let integerEnd = index
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if isInteger, integerEnd - start - (negative ? 1 : 0) <= 18 { return .int(negative ? -magnitude : magnitude) }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let value = Int64(text) { return .int(value) }
        guard let value = Double(text) else { throw fail("invalid number") }
        return .double(value)
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}
