import Core

/// A request head parsed from the bytes a client sent, once it meets the RFC 9112 rules every head
/// must meet before any handler sees the request.
///
/// A head that a front proxy could read differently (NUL, CR or LF inside a line, a bare LF line end,
/// whitespace before a colon, obs-fold, a name or method that is not a token) or whose framing is
/// ambiguous (two Host or Content-Length fields, Content-Length with Transfer-Encoding, a
/// Transfer-Encoding other than chunked) could let one request hide another (request smuggling), so
/// it is refused, and so is a request line over `requestLineLimit` (414) or a head over `headLimit`
/// (431). Lines are checked as they arrive, so a head is refused as soon as its bytes break a rule,
/// without waiting for its end; a line or head that outgrows its limit is refused as soon as the bytes
/// pass the limit, before any rule about its content.
struct RequestHead {
    /// Why a head is refused: 400, 414 (request line) or 431 (head), and what the client is told.
    struct Refusal: Equatable, CustomStringConvertible {
        let status: Int
        let message: String
        var description: String { "\(status) \(message)" }

        static func malformed(_ message: String) -> Refusal { Refusal(status: 400, message: message) }
    }

    /// The longest request line served (its CRLF is not counted); a longer one is 414.
    static let requestLineLimit = 8_192
    /// The longest head served, from its first byte through the blank line; a longer one is 431.
    /// Empty lines before the request line, which are skipped, count towards it.
    static let headLimit = 16_384

    /// What `parse` makes of the bytes at hand.
    enum Parse {
        /// No complete head yet (no CRLF CRLF) and no rule broken so far: read more bytes.
        case incomplete
        case refused(Refusal)
        /// A clean head; `length` = bytes from the first byte through the blank line's CRLF (the body starts there).
        case complete(RequestHead, length: Int)
    }

    let method: String
    /// The target's path (up to the first "?"), percent-decoded (%XX with two hex digits becomes that
    /// byte; any other "%" stays as is; "+" stays "+"); invalid UTF-8 decodes with replacement characters.
    let path: String
    /// The query's arguments (after "?", split on "&"; "k=v", or "k" alone meaning ""), keys and values
    /// percent-decoded with "+" as a space; a repeated key: the later one wins. Empty pieces are skipped.
    let query: [String: String]
    /// 0 or 1 (HTTP/1.0 or HTTP/1.1; "HTTP/1.x" with any other digit x is accepted as 1.x and treated
    /// like 1.1 for defaults).
    let minorVersion: Int
    /// Only the names in `httpInterestingHeaders`, lower-cased, the first of a repeated name kept,
    /// values with leading and trailing SP and HTAB removed.
    let headers: HTTPHeaders
    /// nil when absent.
    let contentLength: Int?
    /// Transfer-Encoding: chunked.
    let chunked: Bool
    /// HTTP/1.1 (and 1.x, x ≥ 1): true unless a Connection header lists the token "close". HTTP/1.0:
    /// false unless it lists "keep-alive" (and not "close").
    let keepAlive: Bool
    /// An "Expect: 100-continue" header on HTTP/1.1.
    let expectsContinue: Bool

    private static let lineTooLong = Refusal(status: 414, message: "the request line is longer than \(requestLineLimit) bytes")
    private static let headTooLong = Refusal(status: 431, message: "the request head is longer than \(headLimit) bytes")
    private static let badLineEnd = Refusal.malformed("a line does not end with CRLF")
    private static let badRequestLine = Refusal.malformed("the request line is not method SP target SP version, or holds a NUL")
    private static let controlInValue = Refusal.malformed("a header value contains NUL, CR, LF or another control character")

    /// Parses the head at the start of `bytes`, which may hold more after it (body, pipelined requests).
    /// Empty lines (CRLF) before the request line are skipped and counted in `length`.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> Parse {
        let count = bytes.count
        // Running out of bytes before the blank line: the head is over its limit, or more must be read.
        let ranOut: Parse = count > headLimit ? .refused(headTooLong) : .incomplete

        var start = 0
        while start + 1 < count, start < headLimit, bytes[start] == .cr, bytes[start + 1] == .lf { start += 2 }
        let lineScanEnd = min(count, start + requestLineLimit + 1)
        var lineEnd = start
        while lineEnd < lineScanEnd, bytes[lineEnd] != .cr, bytes[lineEnd] != .lf { lineEnd += 1 }
        if lineEnd - start > requestLineLimit { return .refused(lineTooLong) }
        if lineEnd == count {
            if count > headLimit { return .refused(headTooLong) }
            if case .refused(let refusal) = splitRequestLine(bytes, start..<lineEnd, complete: false) { return .refused(refusal) }
            return .incomplete
        }
        // The shortest head ends with this line's CRLF and the blank line.
        if lineEnd + 4 > headLimit { return .refused(headTooLong) }
        if bytes[lineEnd] == .lf || lineEnd + 1 < count && bytes[lineEnd + 1] != .lf { return .refused(badLineEnd) }
        // A CR alone may start an empty line, which is skipped.
        if lineEnd == start { return .incomplete }
        let line: RequestLine
        switch splitRequestLine(bytes, start..<lineEnd, complete: true) {
        case .refused(let refusal): return .refused(refusal)
        case .clean(let split): line = split
        }
        if lineEnd + 1 == count { return .incomplete }
        let isHTTP10 = bytes[line.version.upperBound - 1] == .digitZero

        let visible = min(count, headLimit)
        var framing = Framing()
        // Room for the kept fields a request usually has (Host, Content-Type and one or two more).
        var headers = HTTPHeaders(capacity: 4)
        var keptHeaders: UInt64 = 0
        var position = lineEnd + 2
        while true {
            guard position < visible else { return ranOut }
            let first = bytes[position]
            if first == .cr {
                guard position + 1 < visible else { return ranOut }
                guard bytes[position + 1] == .lf else { return .refused(badLineEnd) }
                position += 2
                break
            }
            if first == .lf { return .refused(badLineEnd) }
            if first == .sp || first == .htab { return .refused(.malformed("a header line is folded (obs-fold)")) }

            var index = position
            while index < visible, isTokenByte(bytes[index]) { index += 1 }
            guard index < visible else { return ranOut }
            guard bytes[index] == .colon, index > position else {
                return nameRefusal(bytes, lineStart: position, visible: visible).map { .refused($0) } ?? ranOut
            }
            let name = position..<index
            index += 1
            while index < visible, bytes[index] == .sp || bytes[index] == .htab { index += 1 }
            let valueStart = index
            while index < visible, bytes[index] != .cr {
                if isControl(bytes[index]) { return .refused(controlInValue) }
                index += 1
            }
            guard index + 1 < visible else { return ranOut }
            guard bytes[index + 1] == .lf else { return .refused(controlInValue) }
            var valueEnd = index
            while valueEnd > valueStart, bytes[valueEnd - 1] == .sp || bytes[valueEnd - 1] == .htab { valueEnd -= 1 }
            position = index + 2

            guard let known = knownField(bytes, name) else { continue }
            let value = valueStart..<valueEnd
            if let refusal = framing.add(known.role, value, in: bytes) { return .refused(refusal) }
            if let slot = known.slot, keptHeaders & 1 << slot == 0 {
                keptHeaders |= 1 << slot
                headers.fields.append((known.name, String(utf8: UnsafeRawBufferPointer(rebasing: bytes[value]))))
            }
        }

        if framing.hosts == 0 && !isHTTP10 { return .refused(.malformed("HTTP/1.1 without Host")) }
        let pathEnd = line.target.firstIndex { bytes[$0] == .question } ?? line.target.upperBound
        let head = RequestHead(
            method: String(utf8: UnsafeRawBufferPointer(rebasing: bytes[line.method])),
            path: decoded(bytes, line.target.lowerBound..<pathEnd, plusIsSpace: false),
            query: pathEnd < line.target.upperBound ? arguments(bytes, pathEnd + 1..<line.target.upperBound) : [:],
            minorVersion: isHTTP10 ? 0 : 1, headers: headers, contentLength: framing.contentLength, chunked: framing.chunked,
            keepAlive: isHTTP10 ? framing.listsKeepAlive && !framing.listsClose : !framing.listsClose,
            expectsContinue: !isHTTP10 && framing.expectsContinue)
        return .complete(head, length: position)
    }

    /// Where a request line's three pieces lie.
    private struct RequestLine {
        let method: Range<Int>
        let target: Range<Int>
        let version: Range<Int>
    }

    private enum RequestLineSplit {
        case refused(Refusal)
        case clean(RequestLine)
    }

    /// The request line at `line`, without its CRLF, split at its two spaces, or the first rule it
    /// breaks. When the line is not `complete`, only the rules its bytes so far can break are
    /// checked, and the pieces are those that have arrived (the missing ones empty, at the end).
    private static func splitRequestLine(_ bytes: UnsafeRawBufferPointer, _ line: Range<Int>, complete: Bool) -> RequestLineSplit {
        var firstSpace: Int?
        var secondSpace: Int?
        for index in line {
            let byte = bytes[index]
            if byte == 0 { return .refused(badRequestLine) }
            if byte == .sp {
                if firstSpace == nil {
                    firstSpace = index
                } else if secondSpace == nil {
                    secondSpace = index
                } else {
                    return .refused(badRequestLine)
                }
            }
        }
        if firstSpace == line.lowerBound { return .refused(badRequestLine) }
        if let firstSpace, let secondSpace, secondSpace == firstSpace + 1 { return .refused(badRequestLine) }
        if complete && secondSpace == nil { return .refused(badRequestLine) }

        let method = line.lowerBound..<(firstSpace ?? line.upperBound)
        let target = (firstSpace.map { $0 + 1 } ?? line.upperBound)..<(secondSpace ?? line.upperBound)
        let version = (secondSpace.map { $0 + 1 } ?? line.upperBound)..<line.upperBound
        for index in method where !isTokenByte(bytes[index]) { return .refused(.malformed("the method is not a token")) }
        if !isCleanTarget(bytes, target) {
            return .refused(.malformed("the request target contains a space, a control character or %00"))
        }
        if !isHTTP1(bytes, version, complete: complete) { return .refused(.malformed("the protocol version is not HTTP/1.x")) }
        return .clean(RequestLine(method: method, target: target, version: version))
    }

    /// Whether a request target's bytes (before decoding) are all visible (no control character, SP
    /// or DEL; bytes above 0x7F are let through) and none decodes to NUL (`%00`).
    private static func isCleanTarget(_ bytes: UnsafeRawBufferPointer, _ target: Range<Int>) -> Bool {
        for index in target {
            let byte = bytes[index]
            if byte <= .sp || byte == 0x7F { return false }
            if byte == .percent, index + 2 < target.upperBound, bytes[index + 1] == .digitZero, bytes[index + 2] == .digitZero { return false }
        }
        return true
    }

    /// Whether `version` is "HTTP/1." and one digit, or (when not `complete`) the start of it.
    private static func isHTTP1(_ bytes: UnsafeRawBufferPointer, _ version: Range<Int>, complete: Bool) -> Bool {
        let prefix: StaticString = "HTTP/1."
        let prefixLength = prefix.utf8CodeUnitCount
        if version.count > prefixLength + 1 || complete && version.count != prefixLength + 1 { return false }
        for offset in 0..<version.count {
            let byte = bytes[version.lowerBound + offset]
            if offset < prefixLength ? byte != prefix.utf8Start[offset] : !byte.isDigit { return false }
        }
        return true
    }

    /// Why a header line whose name does not end in a colon is refused, or nil when its colon or end
    /// has not arrived yet.
    private static func nameRefusal(_ bytes: UnsafeRawBufferPointer, lineStart: Int, visible: Int) -> Refusal? {
        var index = lineStart
        while index < visible {
            switch bytes[index] {
            case .colon:
                if index == lineStart { return .malformed("a header line is malformed") }
                let last = bytes[index - 1]
                if last == .sp || last == .htab { return .malformed("whitespace between a header name and its colon") }
                return .malformed("a header name is not a token")
            case .cr, .lf:
                return .malformed("a header line is malformed")
            default:
                index += 1
            }
        }
        return nil
    }

    /// The field named `name` among those `parse` reads, matched case-insensitively without
    /// allocating, or nil for any other name.
    private static func knownField(_ bytes: UnsafeRawBufferPointer, _ name: Range<Int>) -> KnownField? {
        guard name.count < knownFieldsByLength.count else { return nil }
        for candidate in knownFieldsByLength[name.count] {
            var offset = 0
            while offset < name.count, lowercased(bytes[name.lowerBound + offset]) == candidate.bytes[offset] { offset += 1 }
            if offset == name.count { return candidate }
        }
        return nil
    }

    /// `range` percent-decoded (and with "+" as a space when `plusIsSpace`) as UTF-8, invalid
    /// sequences replaced.
    private static func decoded(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, plusIsSpace: Bool) -> String {
        let encoded = UnsafeRawBufferPointer(rebasing: bytes[range])
        guard encoded.contains(where: { $0 == .percent || plusIsSpace && $0 == .plus }) else {
            return String(utf8: encoded)
        }
        return String(unsafeUninitializedCapacity: encoded.count) { buffer in
            var written = 0
            var index = 0
            while index < encoded.count {
                var byte = encoded[index]
                index += 1
                if byte == .percent, index + 1 < encoded.count, let high = encoded[index].hexDigitValue, let low = encoded[index + 1].hexDigitValue {
                    byte = high << 4 | low
                    index += 2
                } else if plusIsSpace && byte == .plus {
                    byte = .sp
                }
                buffer[written] = byte
                written += 1
            }
            return written
        }
    }

    /// The query arguments in `range` (see `query`).
    private static func arguments(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> [String: String] {
        var arguments: [String: String] = [:]
        var pieceStart = range.lowerBound
        while pieceStart < range.upperBound {
            var pieceEnd = pieceStart
            while pieceEnd < range.upperBound, bytes[pieceEnd] != .ampersand { pieceEnd += 1 }
            if pieceEnd > pieceStart {
                var equals = pieceStart
                while equals < pieceEnd, bytes[equals] != .equalsSign { equals += 1 }
                let value = equals < pieceEnd ? decoded(bytes, equals + 1..<pieceEnd, plusIsSpace: true) : ""
                arguments[decoded(bytes, pieceStart..<equals, plusIsSpace: true)] = value
            }
            pieceStart = pieceEnd + 1
        }
        return arguments
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }

    /// Whether `range` equals `lowercase` ignoring ASCII case.
    private static func equalsIgnoringCase(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>, _ lowercase: StaticString) -> Bool {
        guard range.count == lowercase.utf8CodeUnitCount else { return false }
        for offset in 0..<range.count where lowercased(bytes[range.lowerBound + offset]) != lowercase.utf8Start[offset] { return false }
        return true
    }

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

    /// What the fields that frame a request (Host, Content-Length, Transfer-Encoding, Connection,
    /// Expect) have said so far.
    private struct Framing {
        var hosts = 0
        var contentLength: Int?
        var chunked = false
        var listsClose = false
        var listsKeepAlive = false
        var expectsContinue = false

        /// Takes in one field with its trimmed value, or tells which rule it breaks together with
        /// the fields before it.
        mutating func add(_ role: FieldRole, _ value: Range<Int>, in bytes: UnsafeRawBufferPointer) -> Refusal? {
            switch role {
            case .other:
                break
            case .host:
                hosts += 1
                if hosts > 1 { return .malformed("more than one Host") }
            case .contentLength:
                if contentLength != nil { return .malformed("more than one Content-Length") }
                if chunked { return .malformed("both Content-Length and Transfer-Encoding") }
                // 18 digits always fit in an Int.
                guard (1...18).contains(value.count) else { return .malformed("a Content-Length that is not a number") }
                var length = 0
                for index in value {
                    guard bytes[index].isDigit else { return .malformed("a Content-Length that is not a number") }
                    length = length * 10 + Int(bytes[index] - 0x30)
                }
                contentLength = length
            case .transferEncoding:
                if contentLength != nil { return .malformed("both Content-Length and Transfer-Encoding") }
                if chunked || !RequestHead.equalsIgnoringCase(bytes, value, "chunked") {
                    return .malformed("a Transfer-Encoding other than chunked")
                }
                chunked = true
            case .connection:
                var tokenStart = value.lowerBound
                while tokenStart < value.upperBound {
                    var tokenEnd = tokenStart
                    while tokenEnd < value.upperBound, bytes[tokenEnd] != .comma { tokenEnd += 1 }
                    let token = trimmed(bytes, tokenStart..<tokenEnd)
                    if RequestHead.equalsIgnoringCase(bytes, token, "close") { listsClose = true }
                    if RequestHead.equalsIgnoringCase(bytes, token, "keep-alive") { listsKeepAlive = true }
                    tokenStart = tokenEnd + 1
                }
            case .expect:
                if RequestHead.equalsIgnoringCase(bytes, value, "100-continue") { expectsContinue = true }
            }
            return nil
        }

        /// `range` without the SP and HTAB at either end.
        private func trimmed(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) -> Range<Int> {
            var lower = range.lowerBound
            var upper = range.upperBound
            while lower < upper, bytes[lower] == .sp || bytes[lower] == .htab { lower += 1 }
            while upper > lower, bytes[upper - 1] == .sp || bytes[upper - 1] == .htab { upper -= 1 }
            return lower..<upper
        }
    }
}

/// What a field `RequestHead.parse` reads means for the request's framing.
private enum FieldRole {
    case other, host, contentLength, transferEncoding, connection, expect
}

/// A header name `RequestHead.parse` reads: one that frames the request, or one of
/// `httpInterestingHeaders`, which it keeps (`slot` is its bit among those kept).
private struct KnownField {
    let name: String
    let bytes: [UInt8]
    let role: FieldRole
    let slot: Int?
}

/// The names `RequestHead.parse` reads, lower-cased, indexed by their length for a match without
/// allocating.
private let knownFieldsByLength: [[KnownField]] = {
    let framing: [String: FieldRole] = [
        "host": .host, "content-length": .contentLength, "transfer-encoding": .transferEncoding, "connection": .connection,
        "expect": .expect,
    ]
    precondition(httpInterestingHeaders.count <= UInt64.bitWidth, "one bit per kept header")
    var fields = httpInterestingHeaders.enumerated().map { slot, name in
        KnownField(name: name, bytes: Array(name.utf8), role: framing[name] ?? .other, slot: slot)
    }
    for (name, role) in framing where !httpInterestingHeaders.contains(name) {
        fields.append(KnownField(name: name, bytes: Array(name.utf8), role: role, slot: nil))
    }
    var byLength = [[KnownField]](repeating: [], count: (fields.map(\.bytes.count).max() ?? 0) + 1)
    for field in fields { byLength[field.bytes.count].append(field) }
    return byLength
}()

private extension UInt8 {
    static let htab = UInt8(ascii: "\t")
    static let lf = UInt8(ascii: "\n")
    static let cr = UInt8(ascii: "\r")
    static let sp = UInt8(ascii: " ")
    static let percent = UInt8(ascii: "%")
    static let ampersand = UInt8(ascii: "&")
    static let plus = UInt8(ascii: "+")
    static let comma = UInt8(ascii: ",")
    static let digitZero = UInt8(ascii: "0")
    static let colon = UInt8(ascii: ":")
    static let equalsSign = UInt8(ascii: "=")
    static let question = UInt8(ascii: "?")

    var isDigit: Bool { (0x30...0x39).contains(self) }
}
