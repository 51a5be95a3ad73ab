internal import CNGHTTP2

/// `name: value` header lines that many requests share (a batch's provider token, topic and
/// priority), parsed once into the name/value pairs the HTTP/2 session copies from, instead of
/// once per request. Names are lower-cased, as HTTP/2 requires.
///
/// `@unchecked Sendable` invariant: nothing changes after `init`; `fields` point into `storage`,
/// which lives as long as the list and is only read.
public final class HTTP2HeaderList: @unchecked Sendable {
    public let lines: [String]
    private let storage: UnsafeMutableBufferPointer<UInt8>
    let fields: [nghttp2_nv]

    public init(_ lines: [String]) {
        self.lines = lines
        let pairs = lines.compactMap(HTTP2HeaderList.split)
        storage = .allocate(capacity: max(1, pairs.reduce(0) { $0 + $1.name.count + $1.value.count }))
        var fields: [nghttp2_nv] = []
        var offset = 0
        for pair in pairs {
            let name = storage.baseAddress! + offset
            _ = UnsafeMutableBufferPointer(start: name, count: pair.name.count).initialize(from: pair.name)
            offset += pair.name.count
            let value = storage.baseAddress! + offset
            _ = UnsafeMutableBufferPointer(start: value, count: pair.value.count).initialize(from: pair.value)
            offset += pair.value.count
            fields.append(nghttp2_nv(name: name, value: value, namelen: pair.name.count, valuelen: pair.value.count,
                                     flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)))
        }
        self.fields = fields
    }

    deinit { storage.deallocate() }

    /// A `name: value` line as a lower-cased name and a value without surrounding blanks; nil for a
    /// line without a colon or with an empty name.
    static func split(_ line: String) -> (name: [UInt8], value: [UInt8])? {
        let bytes = Array(line.utf8)
        return bytes.withUnsafeBufferPointer { buffer in
            guard let (name, value) = parts(of: buffer) else { return nil }
            return (buffer[name].map(lowercased), Array(buffer[value]))
        }
    }

    /// Where a `name: value` line's name and value lie (as `split` reads them), without copying.
    static func parts(of line: UnsafeBufferPointer<UInt8>) -> (name: Range<Int>, value: Range<Int>)? {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return nil }
        var start = colon + 1, end = line.count
        while start < end, line[start] == 32 || line[start] == 9 { start += 1 }
        while end > start, line[end - 1] == 32 || line[end - 1] == 9 { end -= 1 }
        return (0..<colon, start..<end)
    }

    /// An ASCII upper-case letter lower-cased, any other byte as it is.
    static func lowercased(_ byte: UInt8) -> UInt8 { byte >= 65 && byte <= 90 ? byte + 32 : byte }
}
