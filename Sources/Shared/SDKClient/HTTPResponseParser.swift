#if canImport(Glibc)
import Glibc
#endif
import Core

/// Reads one HTTP/1.1 response out of the bytes a connection has received so far, without copying:
/// call `parse` each time more bytes arrived until it says `.complete` or `.malformed`, then `reset()`
/// for the next response. Handles `Content-Length`, `Transfer-Encoding: chunked` (decoded in place)
/// and bodies that end with the connection.
public struct HTTPResponseParser: Sendable {
    public enum Outcome: Equatable {
        case needMore
        /// `body` is a range of the buffer; `consumed` bytes belong to this response (later bytes, if
        /// any, to the next one); `keepAlive` false when the server will close the connection.
        case complete(status: Int, body: Range<Int>, consumed: Int, keepAlive: Bool)
        case malformed(String)
    }

    /// Where the head ends (index after the blank line), once seen.
    private var headerEnd = -1
    private var searched = 0
    private var status = 0
    private var contentLength = -1
    private var chunked = false
    private var keepAlive = true

    /// The largest head accepted, in bytes.
    public static let maxHeadBytes = 64 * 1024

    public init() {}

    public mutating func reset() { self = HTTPResponseParser() }

    /// Looks at `buffer[0..<count]`. `atEOF`: the peer closed the connection after these bytes.
    /// `bodyless`: the request was HEAD (no body whatever the headers say).
    public mutating func parse(_ buffer: UnsafeMutableRawBufferPointer, count: Int, atEOF: Bool = false,
                               bodyless: Bool = false) -> Outcome {
        if headerEnd < 0 {
            guard let end = findHeadEnd(buffer, count: count) else {
                if count > Self.maxHeadBytes { return .malformed("response head longer than \(Self.maxHeadBytes) bytes") }
                return atEOF ? (count == 0 ? .malformed("connection closed before a response")
                                           : .malformed("connection closed inside the response head")) : .needMore
            }
            headerEnd = end
            if let problem = readHead(buffer, end: end) { return .malformed(problem) }
        }
        if bodyless || status == 204 || status == 304 || (100..<200).contains(status) {
            return .complete(status: status, body: headerEnd..<headerEnd, consumed: headerEnd, keepAlive: keepAlive)
        }
        if chunked { return parseChunked(buffer, count: count, atEOF: atEOF) }
        if contentLength >= 0 {
            let end = headerEnd + contentLength
            if count >= end { return .complete(status: status, body: headerEnd..<end, consumed: end, keepAlive: keepAlive) }
            return atEOF ? .malformed("connection closed after \(count - headerEnd) of \(contentLength) body bytes") : .needMore
        }
        // No length: the body ends with the connection.
        return atEOF ? .complete(status: status, body: headerEnd..<count, consumed: count, keepAlive: false) : .needMore
    }

    /// The header fields of the head `parse` has found in `buffer` (names lower-cased, values
    /// without surrounding blanks; a repeated name keeps its last value); empty before the head is
    /// complete. The head stays in place while a chunked body is decoded, so this holds after
    /// `.complete` too.
    public func headers(in buffer: UnsafeMutableRawBufferPointer) -> [String: String] {
        guard headerEnd > 0 else { return [:] }
        var fields: [String: String] = [:]
        var lineStart = Self.nextLine(buffer, from: 0, end: headerEnd)
        while lineStart < headerEnd - 2 {
            let lineEnd = Self.nextLine(buffer, from: lineStart, end: headerEnd) - 2
            let line = String(decoding: UnsafeRawBufferPointer(rebasing: buffer[lineStart..<lineEnd]), as: UTF8.self)
            if let colon = line.firstIndex(of: ":") {
                var value = line[line.index(after: colon)...]
                while let first = value.first, first == " " || first == "\t" { value = value.dropFirst() }
                while let last = value.last, last == " " || last == "\t" { value = value.dropLast() }
                fields[line[..<colon].lowercased()] = String(value)
            }
            lineStart = lineEnd + 2
        }
        return fields
    }

    private mutating func findHeadEnd(_ buffer: UnsafeMutableRawBufferPointer, count: Int) -> Int? {
        let start = max(0, searched - 3)
        guard count - start >= 4, let base = buffer.baseAddress else {
            searched = count
            return nil
        }
        // memchr scans a word at a time for each CR; then the three bytes after it are compared.
        var index = start
        while index + 3 < count {
            guard let found = memchr(base + index, 13, count - 3 - index) else { break }
            index = base.distance(to: found)
            if buffer[index + 1] == 10 && buffer[index + 2] == 13 && buffer[index + 3] == 10 { return index + 4 }
            index += 1
        }
        searched = count
        return nil
    }

    /// Status line and the headers that frame the body. Nil when fine, else the problem.
    private mutating func readHead(_ buffer: UnsafeMutableRawBufferPointer, end: Int) -> String? {
        // "HTTP/1.1 200 OK"
        guard end >= 12, buffer[0] == UInt8(ascii: "H"), buffer[1] == UInt8(ascii: "T"), buffer[2] == UInt8(ascii: "T"),
            buffer[3] == UInt8(ascii: "P"), buffer[4] == UInt8(ascii: "/"), buffer[8] == UInt8(ascii: " ")
        else { return "not an HTTP response" }
        var code = 0
        for index in 9..<12 {
            let digit = Int(buffer[index]) - 48
            guard (0...9).contains(digit) else { return "bad status code" }
            code = code * 10 + digit
        }
        status = code
        keepAlive = !(buffer[5] == UInt8(ascii: "1") && buffer[7] == UInt8(ascii: "0"))  // HTTP/1.0 closes by default
        // Header lines.
        var lineStart = Self.nextLine(buffer, from: 0, end: end)
        while lineStart < end - 2 {
            let lineEnd = Self.nextLine(buffer, from: lineStart, end: end) - 2
            let colon = memchr(buffer.baseAddress! + lineStart, Int32(UInt8(ascii: ":")), lineEnd - lineStart)
                .map { buffer.baseAddress!.distance(to: $0) } ?? lineEnd
            if colon < lineEnd {
                var valueStart = colon + 1
                while valueStart < lineEnd && (buffer[valueStart] == 32 || buffer[valueStart] == 9) { valueStart += 1 }
                var valueEnd = lineEnd
                while valueEnd > valueStart && (buffer[valueEnd - 1] == 32 || buffer[valueEnd - 1] == 9) { valueEnd -= 1 }
                if Self.equalsLowercased(buffer, lineStart..<colon, "content-length") {
                    var length = 0
                    guard valueEnd > valueStart, valueEnd - valueStart <= 15 else { return "bad Content-Length" }
                    for index in valueStart..<valueEnd {
                        let digit = Int(buffer[index]) - 48
                        guard (0...9).contains(digit) else { return "bad Content-Length" }
                        length = length * 10 + digit
                    }
                    contentLength = length
                } else if Self.equalsLowercased(buffer, lineStart..<colon, "transfer-encoding") {
                    chunked = Self.containsLowercased(buffer, valueStart..<valueEnd, "chunked")
                } else if Self.equalsLowercased(buffer, lineStart..<colon, "connection") {
                    if Self.containsLowercased(buffer, valueStart..<valueEnd, "close") { keepAlive = false }
                    if Self.containsLowercased(buffer, valueStart..<valueEnd, "keep-alive") { keepAlive = true }
                }
            }
            lineStart = lineEnd + 2
        }
        return nil
    }

    /// Checks that every chunk has arrived; then moves the chunks' data together right after the
    /// head (in place) and reports that range.
    private mutating func parseChunked(_ buffer: UnsafeMutableRawBufferPointer, count: Int, atEOF: Bool) -> Outcome {
        var position = headerEnd
        var chunks: [(start: Int, length: Int)] = []
        while true {
            // Chunk size line.
            var lineEnd = position
            while lineEnd + 1 < count && !(buffer[lineEnd] == 13 && buffer[lineEnd + 1] == 10) { lineEnd += 1 }
            guard lineEnd + 1 < count else { return atEOF ? .malformed("connection closed inside a chunked body") : .needMore }
            var size = 0
            var index = position
            var digits = 0
            while index < lineEnd, let value = buffer[index].hexDigitValue.map(Int.init) {
                size = size * 16 + value
                digits += 1
                guard digits <= 12 else { return .malformed("bad chunk size") }
                index += 1
            }
            guard digits > 0 else { return .malformed("bad chunk size") }
            let dataStart = lineEnd + 2
            if size == 0 {
                // Trailers end with an empty line.
                var trailer = dataStart
                while true {
                    var end = trailer
                    while end + 1 < count && !(buffer[end] == 13 && buffer[end + 1] == 10) { end += 1 }
                    guard end + 1 < count else { return atEOF ? .malformed("connection closed inside a chunked body") : .needMore }
                    if end == trailer {
                        let consumed = end + 2
                        var write = headerEnd
                        for chunk in chunks {
                            if write != chunk.start {
                                buffer.baseAddress!.advanced(by: write).copyMemory(from: buffer.baseAddress!.advanced(by: chunk.start),
                                                                                   byteCount: chunk.length)
                            }
                            write += chunk.length
                        }
                        return .complete(status: status, body: headerEnd..<write, consumed: consumed, keepAlive: keepAlive)
                    }
                    trailer = end + 2
                }
            }
            guard dataStart + size + 2 <= count else { return atEOF ? .malformed("connection closed inside a chunked body") : .needMore }
            chunks.append((dataStart, size))
            position = dataStart + size + 2
        }
    }

    /// The index after the CRLF that ends the line starting at `from` (the head ends with CRLF CRLF,
    /// so there always is one before `end`).
    private static func nextLine(_ buffer: UnsafeMutableRawBufferPointer, from: Int, end: Int) -> Int {
        var index = from
        let base = buffer.baseAddress!
        while index + 1 < end {
            guard let found = memchr(base + index, 13, end - 1 - index) else { break }
            index = base.distance(to: found)
            if buffer[index + 1] == 10 { return index + 2 }
            index += 1
        }
        return end
    }

    private static func lower(_ byte: UInt8) -> UInt8 { byte >= 65 && byte <= 90 ? byte + 32 : byte }

    private static func equalsLowercased(_ buffer: UnsafeMutableRawBufferPointer, _ range: Range<Int>, _ name: StaticString) -> Bool {
        guard range.count == name.utf8CodeUnitCount else { return false }
        let text = name.utf8Start
        for offset in 0..<range.count where lower(buffer[range.lowerBound + offset]) != text[offset] { return false }
        return true
    }

    private static func containsLowercased(_ buffer: UnsafeMutableRawBufferPointer, _ range: Range<Int>, _ word: StaticString) -> Bool {
        let length = word.utf8CodeUnitCount
        guard range.count >= length else { return false }
        let text = word.utf8Start
        outer: for start in range.lowerBound...(range.upperBound - length) {
            for offset in 0..<length where lower(buffer[start + offset]) != text[offset] { continue outer }
            return true
        }
        return false
    }
}
