/// A request head as libmicrohttpd leaves it once parsed, and the RFC 9112 rules it must meet before
/// any handler sees the request.
///
/// libmicrohttpd (0.9.75) parses the head in place and leniently: it hands out NUL-terminated pieces
/// (method, target, version, each field's name and value), so a NUL inside a piece silently shortens
/// it; it keeps whitespace before a colon as part of the name, joins obs-fold lines, and takes any
/// byte in a name or a method. Its pieces lie in one buffer, in order, and it overwrites each byte
/// it consumes between them (the SP after the method and after the target, each colon, each CR and
/// LF) with NUL. So a head is clean exactly when the bytes between the pieces are what a clean head
/// leaves there: one NUL after the method and after the target; a NUL and then only SP or HTAB
/// between a name and its value; two NULs (CRLF) ending each line and four (CRLF CRLF) ending the
/// head. Any other byte between the pieces is one the parser hid from the handler (what followed a
/// NUL, a folded line, a bare LF line end). The one sequence this cannot tell from CRLF is a NUL
/// right before a bare LF: the NUL is dropped and no other byte is hidden.
struct RequestHead {
    /// Where one field's name and value lie, as offsets from the head's first byte (the name of a
    /// folded field may lie elsewhere, even before it).
    struct Field: Equatable {
        var name: Range<Int>
        var value: Range<Int>
    }

    /// Why a head is refused: 400, 414 (request line) or 431 (head), and what the client is told.
    struct Refusal: Equatable, CustomStringConvertible {
        let status: Int
        let message: String
        var description: String { "\(status) \(message)" }

        static func malformed(_ message: String) -> Refusal { Refusal(status: 400, message: message) }
    }

    /// The longest request line served (the line ends are not counted); a longer one is 414.
    static let requestLineLimit = 8_192
    /// The longest head served, from the method through the blank line; a longer one is 431.
    static let headLimit = 16_384

    /// The head from the method's first byte through the blank line that ends it.
    let bytes: UnsafeRawBufferPointer
    /// The method, from offset 0 (its length as the parser saw it, up to a NUL).
    let methodLength: Int
    /// Where the target starts, and its length as the parser saw it before decoding it (up to a
    /// NUL); nil when the parser never showed it.
    let targetStart: Int
    let targetLength: Int?
    /// Whether the target, before decoding, holds only visible bytes (`isCleanTarget`).
    let targetIsClean: Bool
    let version: Range<Int>
    let fields: [Field]

    /// The first rule the head breaks, or nil when it is clean.
    func refusal() -> Refusal? {
        if version.upperBound > Self.requestLineLimit {
            return Refusal(status: 414, message: "the request line is longer than \(Self.requestLineLimit) bytes")
        }
        if bytes.count > Self.headLimit {
            return Refusal(status: 431, message: "the request head is longer than \(Self.headLimit) bytes")
        }
        guard let targetLength else { return .malformed("the request target was not seen") }
        let targetEnd = targetStart + targetLength
        guard targetStart == methodLength + 1, version.lowerBound == targetEnd + 1, targetLength > 0
        else { return .malformed("the request line is not method SP target SP version, or holds a NUL") }
        guard version.upperBound + 4 <= bytes.count else { return .malformed("a line does not end with CRLF") }
        if methodLength == 0 || !(0..<methodLength).allSatisfy({ Self.isTokenByte(bytes[$0]) }) {
            return .malformed("the method is not a token")
        }
        if !targetIsClean { return .malformed("the request target contains a space, a control character or %00") }
        if !Self.isHTTP1(version, in: bytes) { return .malformed("the protocol version is not HTTP/1.x") }

        var position = version.upperBound
        var hosts = 0
        var contentLengths: [Range<Int>] = []
        var transferEncodings: [Range<Int>] = []
        for field in fields {
            if let problem = lineEnd(from: position, to: field.name.lowerBound) { return problem }
            if let problem = check(field) { return problem }
            position = field.value.upperBound
            if equalsIgnoringCase(field.name, "host") { hosts += 1 }
            if equalsIgnoringCase(field.name, "content-length") { contentLengths.append(field.value) }
            if equalsIgnoringCase(field.name, "transfer-encoding") { transferEncodings.append(field.value) }
        }
        if let problem = headEnd(from: position) { return problem }

        if hosts > 1 { return .malformed("more than one Host") }
        if hosts == 0 && !equals(version, "HTTP/1.0") { return .malformed("HTTP/1.1 without Host") }
        if contentLengths.count > 1 { return .malformed("more than one Content-Length") }
        if !transferEncodings.isEmpty {
            if !contentLengths.isEmpty { return .malformed("both Content-Length and Transfer-Encoding") }
            if transferEncodings.count > 1 || !equalsIgnoringCase(trimmed(transferEncodings[0]), "chunked") {
                return .malformed("a Transfer-Encoding other than chunked")
            }
        }
        if let length = contentLengths.first, length.isEmpty || !length.allSatisfy({ (0x30...0x39).contains(bytes[$0]) }) {
            return .malformed("a Content-Length that is not a number")
        }
        return nil
    }

    /// The rules for one field, which `lineEnd` has placed right after the line before it.
    private func check(_ field: Field) -> Refusal? {
        guard !field.name.isEmpty, field.name.upperBound < field.value.lowerBound, field.value.upperBound <= bytes.count
        else { return .malformed("a header line is malformed") }
        if let last = field.name.last, bytes[last] == 0x20 || bytes[last] == 0x09 {
            return .malformed("whitespace between a header name and its colon")
        }
        if !field.name.allSatisfy({ Self.isTokenByte(bytes[$0]) }) { return .malformed("a header name is not a token") }
        // The colon, then optional whitespace.
        guard bytes[field.name.upperBound] == 0,
              (field.name.upperBound + 1..<field.value.lowerBound).allSatisfy({ bytes[$0] == 0x20 || bytes[$0] == 0x09 })
        else { return .malformed("a header line is malformed") }
        if field.value.contains(where: { Self.isControl(bytes[$0]) }) {
            return .malformed("a header value contains NUL, CR, LF or another control character")
        }
        return nil
    }

    /// The bytes between a line's last piece and the next field's name: its CRLF, nothing else.
    private func lineEnd(from start: Int, to next: Int) -> Refusal? {
        if next == start + 2, bytes[start] == 0, bytes[start + 1] == 0 { return nil }
        return gapProblem(from: start, to: next)
    }

    /// The bytes between the last line's last piece and the head's end: CRLF CRLF.
    private func headEnd(from start: Int) -> Refusal? {
        if bytes.count == start + 4, (start..<bytes.count).allSatisfy({ bytes[$0] == 0 }) { return nil }
        return gapProblem(from: start, to: bytes.count)
    }

    /// What a wrong gap most likely holds.
    private func gapProblem(from start: Int, to end: Int) -> Refusal {
        guard start < end, end <= bytes.count, start < bytes.count else {
            return .malformed("a header line is folded (obs-fold) or malformed")
        }
        let gap = bytes[start..<end]
        if gap.count > 2, gap.prefix(2).allSatisfy({ $0 == 0 }), gap.dropFirst(2).first == 0x20 || gap.dropFirst(2).first == 0x09 {
            return .malformed("a header line is folded (obs-fold)")
        }
        if gap.first == 0, gap.dropFirst().contains(where: { $0 != 0 }) {
            return .malformed("a header value contains NUL, CR, LF or another control character")
        }
        return .malformed("a header value ends with NUL, or a line does not end with CRLF")
    }

    private func equals(_ range: Range<Int>, _ text: StaticString) -> Bool {
        range.count == text.utf8CodeUnitCount && zip(range, UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
            .allSatisfy { bytes[$0] == $1 }
    }

    private func equalsIgnoringCase(_ range: Range<Int>, _ lowercase: StaticString) -> Bool {
        range.count == lowercase.utf8CodeUnitCount
            && zip(range, UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount))
            .allSatisfy { Self.lowercased(bytes[$0]) == $1 }
    }

    /// `range` without the SP and HTAB at either end.
    private func trimmed(_ range: Range<Int>) -> Range<Int> {
        var lower = range.lowerBound, upper = range.upperBound
        while lower < upper, bytes[lower] == 0x20 || bytes[lower] == 0x09 { lower += 1 }
        while upper > lower, bytes[upper - 1] == 0x20 || bytes[upper - 1] == 0x09 { upper -= 1 }
        return lower..<upper
    }

    private static func isHTTP1(_ range: Range<Int>, in bytes: UnsafeRawBufferPointer) -> Bool {
        let prefix: StaticString = "HTTP/1."
        return range.count == 8 && range.upperBound <= bytes.count
            && zip(range, UnsafeBufferPointer(start: prefix.utf8Start, count: 7)).allSatisfy { bytes[$0] == $1 }
            && (0x30...0x39).contains(bytes[range.upperBound - 1])
    }

    static func lowercased(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }

    /// RFC 9110 tchar: ALPHA, DIGIT and ``!#$%&'*+-.^_`|~``.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }

    /// A control character other than HTAB (field values may hold SP, HTAB, VCHAR and obs-text).
    static func isControl(_ byte: UInt8) -> Bool { byte < 0x20 && byte != 0x09 || byte == 0x7F }

    /// Whether a request target's bytes (before decoding) are all visible (no control character,
    /// SP or DEL; bytes above 0x7F are let through) and none decodes to NUL (`%00`), which the
    /// parser's decoding would turn into the end of the path or of a query value.
    static func isCleanTarget(_ target: UnsafeRawBufferPointer) -> Bool {
        if target.contains(where: { $0 <= 0x20 || $0 == 0x7F }) { return false }
        let percent = UInt8(ascii: "%"), zero = UInt8(ascii: "0")
        return !target.indices.dropLast(2).contains { target[$0] == percent && target[$0 + 1] == zero && target[$0 + 2] == zero }
    }
}
