/// Writes zip files byte by byte (stored entries, real CRC-32s), with the flaws the rich media
/// checks must catch available as options, so that tests need no zip library.
package struct ZipBuilder {
    package struct Entry {
        package var name: String
        package var data: [UInt8]
        /// The method written in the headers (the data is stored either way).
        package var method: UInt16 = 0
        package var flags: UInt16 = 0
        /// Overrides the uncompressed size written in the headers.
        package var declaredSize: UInt32?
        /// Another name for the local header than the central directory's.
        package var localName: String?
        /// False: the local header and data are written, but the central directory leaves the entry out.
        package var listed = true
        /// The CRC and sizes follow the data in a data descriptor (with its signature), and flag
        /// bit 3 says so; the local header has zeros in their place.
        package var descriptor = false

        package init(_ name: String, _ data: [UInt8], method: UInt16 = 0, flags: UInt16 = 0, declaredSize: UInt32? = nil,
                     localName: String? = nil, listed: Bool = true, descriptor: Bool = false) {
            self.name = name
            self.data = data
            self.method = method
            self.flags = descriptor ? flags | 8 : flags
            self.declaredSize = declaredSize
            self.localName = localName
            self.listed = listed
            self.descriptor = descriptor
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
        var listed = 0
        for entry in entries {
            let name = Array(entry.name.utf8), localName = Array((entry.localName ?? entry.name).utf8), offset = UInt32(out.count)
            // CRC, compressed size, uncompressed size.
            let sizes = Self.le32(Self.crc32(entry.data)) + Self.le32(UInt32(entry.data.count)) + Self.le32(entry.declaredSize ?? UInt32(entry.data.count))
            out += Self.le32(0x0403_4b50) + Self.le16(20) + Self.le16(entry.flags) + Self.le16(entry.method) + Self.le16(0) + Self.le16(0x21)
            out += entry.descriptor ? [UInt8](repeating: 0, count: 12) : sizes
            out += Self.le16(UInt16(localName.count)) + Self.le16(0) + localName + entry.data
            if entry.descriptor { out += Self.le32(0x0807_4b50) + sizes }
            guard entry.listed else { continue }
            listed += 1
            directory += Self.le32(0x0201_4b50) + Self.le16(20) + Self.le16(20) + Self.le16(entry.flags) + Self.le16(entry.method)
            directory += Self.le16(0) + Self.le16(0x21) + sizes + Self.le16(UInt16(name.count)) + Self.le16(0) + Self.le16(0)
            directory += Self.le16(0) + Self.le16(0) + Self.le32(0) + Self.le32(offset) + name
        }
        let start = UInt32(out.count)
        out += directory
        out += Self.le32(0x0605_4b50) + Self.le16(0) + Self.le16(0) + Self.le16(UInt16(listed)) + Self.le16(UInt16(listed))
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
