extension JSON {
    /// Compact UTF-8 encoding. Object members are written in sorted key order so that output is stable.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(128)
        write(to: &out)
        return out
    }

    /// The compact encoding as a `String`.
    public var text: String { String(decoding: encoded(), as: UTF8.self) }

    /// Appends the compact encoding to `out`.
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value): out.appendDecimal(value)
        case .double(let value):
            out.append(contentsOf: (value.isFinite ? JSON.format(value) : "null").utf8)
        case .string(let value): JSON.writeString(value, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (position, item) in items.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            if members.count < 2 {
                // Nothing to sort (and no array to sort in).
                for (key, value) in members { JSON.writeMember(key, value, to: &out) }
            } else if members.count == 2 {
                // Two members: one comparison orders them, without an array.
                let first = members.first!, second = members[members.index(after: members.startIndex)]
                let (lower, upper) = first.key < second.key ? (first, second) : (second, first)
                JSON.writeMember(lower.key, lower.value, to: &out)
                out.append(UInt8(ascii: ","))
                JSON.writeMember(upper.key, upper.value, to: &out)
            } else {
                for (position, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                    if position > 0 { out.append(UInt8(ascii: ",")) }
                    JSON.writeMember(member.key, member.value, to: &out)
                }
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `"key":value`.
    private static func writeMember(_ key: String, _ value: JSON, to out: inout [UInt8]) {
        writeString(key, to: &out)
        out.append(UInt8(ascii: ":"))
        value.write(to: &out)
    }

    public static func writeString(_ value: String, to out: inout [UInt8]) {
        var value = value
        value.withUTF8 { writeString(utf8: $0, to: &out) }
    }

    /// Writes `bytes` (valid UTF-8) as a JSON string: the runs that need no escape are copied whole.
    static func writeString(utf8 bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var runStart = 0
        var index = 0
        while index < bytes.count {
            if index + 8 <= bytes.count, !mayNeedEscape(UnsafeRawPointer(bytes.baseAddress! + index).loadUnaligned(as: UInt64.self)) {
                index += 8
                continue
            }
            let byte = bytes[index]
            index += 1
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index - 1]))
            runStart = index
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
            case 0x0A: out.append(contentsOf: "\\n".utf8)
            case 0x0D: out.append(contentsOf: "\\r".utf8)
            case 0x09: out.append(contentsOf: "\\t".utf8)
            default:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: "\\u00".utf8)
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            }
        }
        out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
        out.append(UInt8(ascii: "\""))
    }

    /// Whether any of the eight bytes of `word` is a control character, `"` or `\\` (never false
    /// when one is; the classic "has a zero byte" and "has a byte less than n" tests).
    static func mayNeedEscape(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ value: UInt64) -> Bool { (value &- ones) & ~value & highs != 0 }
        let control = (word &- ones &* 0x20) & ~word & highs != 0
        return control || hasZeroByte(word ^ (ones &* 0x22)) || hasZeroByte(word ^ (ones &* 0x5C))
    }
}
