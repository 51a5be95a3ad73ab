import Core

/// Decodes a chunked request body (RFC 9112 §7.1) as its bytes arrive: chunk sizes in hex with
/// optional extensions, each chunk's data and CRLF, the last chunk, then trailer fields, which are
/// read and dropped. Data beyond `limit` bytes is dropped too, and the body ends `tooLarge`.
struct ChunkedBody {
    enum Step: Equatable {
        /// Every byte given was taken; more are needed.
        case needMore
        /// The body ended; the bytes after it are the next request's.
        case done
        case malformed(String)
    }

    /// The longest chunk-size line (size, extensions, CRLF) and trailer line taken.
    static let lineLimit = 4_096

    private enum State {
        case size
        case data(remaining: Int)
        case dataEnd
        case trailer
    }

    let limit: Int
    private(set) var body: [UInt8] = []
    private(set) var tooLarge = false
    private var state = State.size
    /// Bytes of trailer fields taken so far (at most `RequestHead.headLimit`).
    private var trailerBytes = 0

    init(limit: Int) { self.limit = limit }

    /// Takes bytes from `bytes[offset...]`, moving `offset` past what it took.
    mutating func decode(_ bytes: UnsafeRawBufferPointer, offset: inout Int) -> Step {
        while offset < bytes.count {
            switch state {
            case .size:
                guard let end = Self.lineEnd(bytes, from: offset) else { return needLine(bytes, from: offset) }
                var size = 0
                var index = offset
                while index < end, let digit = bytes[index].hexDigitValue.map(Int.init) {
                    guard size < 1 << 56 else { return .malformed("a chunk size is too large") }
                    size = size << 4 | digit
                    index += 1
                }
                // Only whitespace may come between the size and its extensions (";").
                var next = index
                while next < end, bytes[next] == 0x20 || bytes[next] == 0x09 { next += 1 }
                guard index > offset, next == end || bytes[next] == UInt8(ascii: ";")
                else { return .malformed("a chunk size is not hexadecimal") }
                if bytes[index..<end].contains(where: { RequestHead.isControl($0) && $0 != 0x09 }) {
                    return .malformed("a chunk extension contains a control character")
                }
                offset = end + 2
                state = size == 0 ? .trailer : .data(remaining: size)
            case .data(let remaining):
                let take = min(remaining, bytes.count - offset)
                if !tooLarge {
                    if body.count + take > limit {
                        tooLarge = true
                        body = []
                    } else {
                        body.append(contentsOf: bytes[offset..<offset + take])
                    }
                }
                offset += take
                state = take == remaining ? .dataEnd : .data(remaining: remaining - take)
            case .dataEnd:
                guard bytes.count - offset >= 2 else { return .needMore }
                guard bytes[offset] == 0x0D, bytes[offset + 1] == 0x0A else { return .malformed("a chunk does not end with CRLF") }
                offset += 2
                state = .size
            case .trailer:
                guard let end = Self.lineEnd(bytes, from: offset) else { return needLine(bytes, from: offset) }
                trailerBytes += end + 2 - offset
                guard trailerBytes <= RequestHead.headLimit else {
                    return .malformed("the trailer fields are longer than \(RequestHead.headLimit) bytes")
                }
                let empty = end == offset
                offset = end + 2
                if empty { return .done }
            }
        }
        return .needMore
    }

    /// A line not yet ended: wait for more, unless it is already too long or holds a bare LF.
    private func needLine(_ bytes: UnsafeRawBufferPointer, from offset: Int) -> Step {
        if bytes.count - offset > Self.lineLimit { return .malformed("a chunk line is longer than \(Self.lineLimit) bytes") }
        if bytes[offset...].contains(0x0A) { return .malformed("a chunk line does not end with CRLF") }
        return .needMore
    }

    /// Where the CRLF ending the line at `offset` starts, or nil when it has not arrived (or the
    /// line holds a bare LF, which `needLine` refuses).
    private static func lineEnd(_ bytes: UnsafeRawBufferPointer, from offset: Int) -> Int? {
        var index = offset
        while index < bytes.count {
            if bytes[index] == 0x0A { return index > offset && bytes[index - 1] == 0x0D ? index - 1 : nil }
            index += 1
        }
        return nil
    }
}
