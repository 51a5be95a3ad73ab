/// Writes zip files byte by byte (stored entries, real CRC-32s), with the flaws the rich media
/// checks must catch available as options, so that tests need no zip library.
package struct ZipBuilder {
    package struct Entry {
        package var name: String
        package var data: [UInt8]
        /// The method written in the headers (the data is stored either way).
        package var method: UInt16 = 0
        package var flags: UInt16 = 0
        /// Overrides the uncompressed size written in the central directory.
        package var declaredSize: UInt32?

        package init(_ name: String, _ data: [UInt8], method: UInt16 = 0, flags: UInt16 = 0, declaredSize: UInt32? = nil) {
            self.name = name
            self.data = data
            self.method = method
            self.flags = flags
            self.declaredSize = declaredSize
        }
    }

    package var entries: [Entry]
    package var comment: [UInt8] = []

    package init(_ entries: [Entry]) { self.entries = entries }

    /// A page: `index.html` and an image in a folder.
    package static var page: ZipBuilder {
        ZipBuilder([Entry("index.html", Array("<html><body>Sale!</body></html>".utf8)), Entry("img/", []),
                    Entry("img/a.png", (0..<300).map { UInt8($0 % 251) })])
    }

    package var bytes: [UInt8] {
        var out: [UInt8] = []
        var directory: [UInt8] = []
        for entry in entries {
            let name = Array(entry.name.utf8), crc = Self.crc32(entry.data), offset = UInt32(out.count)
            out += Self.le32(0x0403_4b50) + Self.le16(20) + Self.le16(entry.flags) + Self.le16(entry.method) + Self.le16(0) + Self.le16(0x21)
            out += Self.le32(crc) + Self.le32(UInt32(entry.data.count)) + Self.le32(UInt32(entry.data.count))
            out += Self.le16(UInt16(name.count)) + Self.le16(0) + name + entry.data
            directory += Self.le32(0x0201_4b50) + Self.le16(20) + Self.le16(20) + Self.le16(entry.flags) + Self.le16(entry.method)
            directory += Self.le16(0) + Self.le16(0x21) + Self.le32(crc) + Self.le32(UInt32(entry.data.count))
            directory += Self.le32(entry.declaredSize ?? UInt32(entry.data.count)) + Self.le16(UInt16(name.count)) + Self.le16(0) + Self.le16(0)
            directory += Self.le16(0) + Self.le16(0) + Self.le32(0) + Self.le32(offset) + name
        }
        let start = UInt32(out.count)
        out += directory
        out += Self.le32(0x0605_4b50) + Self.le16(0) + Self.le16(0) + Self.le16(UInt16(entries.count)) + Self.le16(UInt16(entries.count))
        out += Self.le32(UInt32(directory.count)) + Self.le32(start) + Self.le16(UInt16(comment.count)) + comment
        return out
    }

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> UInt32($0 * 8)) } }

    static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }
}
