/// Checks that a reply body is one JSON object and picks out the top-level members a client decides
/// by: the Pushwoosh envelope's `status_code`, the OneSignal helper's `status` and `player_id`.
/// One pass over the bytes with no allocation, so a load generator can check every reply.
public enum EnvelopeScanner {
    /// What the top level of a valid JSON object holds.
    public struct Envelope: Equatable, Sendable {
        /// `status_code` when it is an integer.
        public var statusCode: Int?
        /// `status` when it is an integer.
        public var status: Int?
        /// The bytes of `player_id` when it is a string (without the quotes, escapes as sent).
        public var playerID: Range<Int>?
    }

    /// Nil when `bytes[range]` is not exactly one JSON object (surrounding whitespace allowed).
    public static func scan(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Envelope? {
        var scanner = Scanner(bytes: bytes, index: range.lowerBound, end: range.upperBound)
        var envelope = Envelope()
        scanner.skipSpace()
        guard scanner.peek() == UInt8(ascii: "{") else { return nil }
        guard scanner.object(depth: 0, top: &envelope) else { return nil }
        scanner.skipSpace()
        return scanner.index == scanner.end ? envelope : nil
    }

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var index: Int
        let end: Int

        func peek() -> UInt8 { index < end ? bytes[index] : 0 }

        mutating func skipSpace() {
            while index < end {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func value(depth: Int) -> Bool {
            guard depth < 64 else { return false }
            switch peek() {
            case UInt8(ascii: "{"):
                var ignored = Envelope()
                return object(depth: depth + 1, top: &ignored, recording: false)
            case UInt8(ascii: "["): return array(depth: depth + 1)
            case UInt8(ascii: "\""): return string() != nil
            case UInt8(ascii: "t"): return literal("true")
            case UInt8(ascii: "f"): return literal("false")
            case UInt8(ascii: "n"): return literal("null")
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number() != nil
            default: return false
            }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let length = word.utf8CodeUnitCount
            guard end - index >= length else { return false }
            for offset in 0..<length where bytes[index + offset] != word.utf8Start[offset] { return false }
            index += length
            return true
        }

        /// The number's value when it is an integer that fits, else Int.min; nil when malformed.
        mutating func number() -> Int? {
            var integer = 0
            var negative = false
            var exact = true
            if peek() == UInt8(ascii: "-") {
                negative = true
                index += 1
            }
            guard (48...57).contains(peek()) else { return nil }
            if peek() == 48 {
                index += 1
            } else {
                var digits = 0
                while (48...57).contains(peek()) {
                    digits += 1
                    if digits > 18 { exact = false } else { integer = integer * 10 + Int(peek() - 48) }
                    index += 1
                }
            }
            if peek() == UInt8(ascii: ".") {
                exact = false
                index += 1
                guard (48...57).contains(peek()) else { return nil }
                while (48...57).contains(peek()) { index += 1 }
            }
            if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
                exact = false
                index += 1
                if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
                guard (48...57).contains(peek()) else { return nil }
                while (48...57).contains(peek()) { index += 1 }
            }
            return exact ? (negative ? -integer : integer) : Int.min
        }

        /// The string's content range (escapes left as they are); nil when malformed.
        mutating func string() -> Range<Int>? {
            index += 1  // the opening quote
            let start = index
            while index < end {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return start..<(index - 1)
                }
                if byte < 0x20 { return nil }
                if byte == UInt8(ascii: "\\") {
                    index += 1
                    guard index < end else { return nil }
                    switch bytes[index] {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
                        UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                        index += 1
                    case UInt8(ascii: "u"):
                        guard end - index > 4 else { return nil }
                        for offset in 1...4 {
                            let hex = bytes[index + offset]
                            guard (48...57).contains(hex) || (65...70).contains(hex) || (97...102).contains(hex) else { return nil }
                        }
                        index += 5
                    default: return nil
                    }
                } else {
                    index += 1
                }
            }
            return nil
        }

        mutating func array(depth: Int) -> Bool {
            index += 1
            skipSpace()
            if peek() == UInt8(ascii: "]") {
                index += 1
                return true
            }
            while true {
                skipSpace()
                guard value(depth: depth) else { return false }
                skipSpace()
                switch peek() {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"):
                    index += 1
                    return true
                default: return false
                }
            }
        }

        mutating func object(depth: Int, top: inout Envelope, recording: Bool = true) -> Bool {
            index += 1
            skipSpace()
            if peek() == UInt8(ascii: "}") {
                index += 1
                return true
            }
            while true {
                skipSpace()
                guard peek() == UInt8(ascii: "\""), let key = string() else { return false }
                skipSpace()
                guard peek() == UInt8(ascii: ":") else { return false }
                index += 1
                skipSpace()
                if recording, let member = member(key) {
                    switch member {
                    case .statusCode, .status:
                        if (48...57).contains(peek()) || peek() == UInt8(ascii: "-") {
                            guard let number = number() else { return false }
                            if number != Int.min {
                                if member == .statusCode { top.statusCode = number } else { top.status = number }
                            }
                        } else {
                            guard value(depth: depth) else { return false }
                        }
                    case .playerID:
                        if peek() == UInt8(ascii: "\"") {
                            guard let text = string() else { return false }
                            top.playerID = text
                        } else {
                            guard value(depth: depth) else { return false }
                        }
                    }
                } else {
                    guard value(depth: depth) else { return false }
                }
                skipSpace()
                switch peek() {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"):
                    index += 1
                    return true
                default: return false
                }
            }
        }

        enum Member { case statusCode, status, playerID }

        func member(_ key: Range<Int>) -> Member? {
            switch key.count {
            case 11 where equals(key, "status_code"): return .statusCode
            case 6 where equals(key, "status"): return .status
            case 9 where equals(key, "player_id"): return .playerID
            default: return nil
            }
        }

        func equals(_ range: Range<Int>, _ word: StaticString) -> Bool {
            for offset in 0..<range.count where bytes[range.lowerBound + offset] != word.utf8Start[offset] { return false }
            return true
        }
    }
}
