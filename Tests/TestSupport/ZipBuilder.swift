/// Writes zip files byte by byte (stored or deflated entries, real CRC-32s), with the flaws the rich
/// media checks must catch available as options, so that tests need no zip library.
package struct ZipBuilder {
    package struct Entry {
        package var name: String
        package var data: [UInt8]
        /// The method written in the headers: 8 deflates the data (`ZipBuilder.deflate`), any other
        /// stores it as it is.
        package var method: UInt16 = 0
        package var flags: UInt16 = 0
        /// Overrides the uncompressed size written in the headers.
        package var declaredSize: UInt32?
        /// Overrides the CRC-32 written in the headers.
        package var declaredCRC: UInt32?
        /// The central directory's external attributes (a Unix mode in the upper 16 bits).
        package var externalAttributes: UInt32 = 0
        /// Another name for the local header than the central directory's.
        package var localName: String?
        /// False: the local header and data are written, but the central directory leaves the entry out.
        package var listed = true
        /// The CRC and sizes follow the data in a data descriptor (with its signature), and flag
        /// bit 3 says so; the local header has zeros in their place.
        package var descriptor = false

        package init(_ name: String, _ data: [UInt8], method: UInt16 = 0, flags: UInt16 = 0, declaredSize: UInt32? = nil,
                     declaredCRC: UInt32? = nil, externalAttributes: UInt32 = 0, localName: String? = nil, listed: Bool = true,
                     descriptor: Bool = false) {
            self.name = name
            self.data = data
            self.method = method
            self.flags = descriptor ? flags | 8 : flags
            self.declaredSize = declaredSize
            self.declaredCRC = declaredCRC
            self.externalAttributes = externalAttributes
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
            let data = entry.method == 8 ? Self.deflate(entry.data) : entry.data
            // CRC, compressed size, uncompressed size.
            let sizes = Self.le32(entry.declaredCRC ?? Self.crc32(entry.data)) + Self.le32(UInt32(data.count))
                + Self.le32(entry.declaredSize ?? UInt32(entry.data.count))
            out += Self.le32(0x0403_4b50) + Self.le16(20) + Self.le16(entry.flags) + Self.le16(entry.method) + Self.le16(0) + Self.le16(0x21)
            out += entry.descriptor ? [UInt8](repeating: 0, count: 12) : sizes
            out += Self.le16(UInt16(localName.count)) + Self.le16(0) + localName + data
            if entry.descriptor { out += Self.le32(0x0807_4b50) + sizes }
            guard entry.listed else { continue }
            listed += 1
            // Made by Unix (3) when the attributes carry a Unix mode, else MS-DOS (0).
            let madeBy: UInt16 = entry.externalAttributes >> 16 != 0 ? 0x0314 : 20
            directory += Self.le32(0x0201_4b50) + Self.le16(madeBy) + Self.le16(20) + Self.le16(entry.flags) + Self.le16(entry.method)
            directory += Self.le16(0) + Self.le16(0x21) + sizes + Self.le16(UInt16(name.count)) + Self.le16(0) + Self.le16(0)
            directory += Self.le16(0) + Self.le16(0) + Self.le32(entry.externalAttributes) + Self.le32(offset) + name
        }
        let start = UInt32(out.count)
        out += directory
        out += Self.le32(0x0605_4b50) + Self.le16(0) + Self.le16(0) + Self.le16(UInt16(listed)) + Self.le16(UInt16(listed))
        out += Self.le32(UInt32(directory.count)) + Self.le32(start) + Self.le16(UInt16(comment.count)) + comment
        return out
    }

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> UInt32($0 * 8)) } }

    /// A raw deflate stream of `data`: one block of fixed Huffman codes holding literals, and each run
    /// of a repeated byte as matches of 258 bytes at distance 1 (so zeros shrink about 160 times).
    package static func deflate(_ data: [UInt8]) -> [UInt8] {
        var bits = BitWriter()
        bits.put(1, count: 1)  // the last block
        bits.put(1, count: 2)  // fixed Huffman codes
        var index = 0
        while index < data.count {
            let byte = data[index]
            // Literals 0–143: 8-bit codes from 0x30; 144–255: 9-bit codes from 0x190.
            if byte < 144 { bits.code(0x30 + UInt32(byte), count: 8) } else { bits.code(0x190 + UInt32(byte) - 144, count: 9) }
            index += 1
            var run = 0
            while index + run < data.count, data[index + run] == byte { run += 1 }
            for _ in 0..<(run / 258) {
                bits.code(0xC5, count: 8)  // length 258 (code 285)
                bits.code(0, count: 5)  // distance 1 (code 0)
            }
            index += run / 258 * 258
        }
        bits.code(0, count: 7)  // end of block (code 256)
        return bits.finished()
    }

    /// Bits packed from the least significant end of each byte, as deflate writes them.
    struct BitWriter {
        var bytes: [UInt8] = []
        var pending: UInt32 = 0
        var pendingCount: UInt32 = 0

        mutating func put(_ value: UInt32, count: UInt32) {
            pending |= value << pendingCount
            pendingCount += count
            while pendingCount >= 8 {
                bytes.append(UInt8(pending & 0xFF))
                pending >>= 8
                pendingCount -= 8
            }
        }

        /// A Huffman code: its most significant bit first.
        mutating func code(_ value: UInt32, count: UInt32) {
            for shift in (0..<count).reversed() { put(value >> shift & 1, count: 1) }
        }

        mutating func finished() -> [UInt8] {
            if pendingCount > 0 { bytes.append(UInt8(pending & 0xFF)) }
            return bytes
        }
    }

    static let crcTable: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        return crc
    }

    package static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return ~crc
    }
}
