/// The central directory of a zip file, read without unpacking anything: what Herald checks
/// before it stores a rich media page. Only single-disk, non-zip64 archives are read (a page is
/// far below 4 GB); every structural problem is a `ZipProblem` naming what is wrong. The local
/// headers are walked too (`walk`), since streaming unzippers read those instead of the directory.
/// What the entries' data holds is checked by unpacking it (`ZipEntryData`).
struct ZipDirectory: Equatable {
    struct Entry: Equatable {
        var name: String
        /// 0 stored, 8 deflated.
        var method: UInt16
        var compressedSize: Int
        var uncompressedSize: Int
        /// The CRC-32 of the unpacked data, as the headers state it.
        var crc: UInt32 = 0
        /// Where the entry's (compressed) data starts, after its local header.
        var dataOffset = 0
        /// The central directory's external attributes: a Unix mode in the upper 16 bits (file type
        /// and permissions) from Unix zippers, MS-DOS attributes in the lower ones.
        var externalAttributes: UInt32 = 0
        var isDirectory: Bool { name.hasSuffix("/") }
        /// The name as error messages quote it.
        var quotedName: String { String(name.prefix(100)).debugDescription }

        /// What the external attributes say the entry is, when it is neither a regular file nor a
        /// folder (unzippers such as SSZipArchive create a symbolic link for a link's entry, whose
        /// data is the target); nil for a file, a folder, or attributes that name no type.
        var specialKind: String? {
            switch externalAttributes >> 16 & 0o170000 {
            case 0, 0o100000, 0o040000: break
            case 0o120000: return "a symbolic link"
            case 0o010000: return "a named pipe"
            case 0o020000: return "a character device"
            case 0o060000: return "a block device"
            case 0o140000: return "a socket"
            case let type: return "of Unix file type 0o\(String(type, radix: 8))"
            }
            // FILE_ATTRIBUTE_REPARSE_POINT: a Windows symbolic link or junction.
            return externalAttributes & 0x400 != 0 ? "a Windows reparse point (a link)" : nil
        }
    }

    /// What the central directory says of an entry's local header, checked by `walk`.
    struct Listing {
        var entry: Entry
        var name: ArraySlice<UInt8>
        var flags: UInt16
        var crc: UInt32
        var local: Int
    }

    var entries: [Entry]

    static let endRecordSize = 22
    static let endSignature: UInt32 = 0x0605_4b50
    static let entrySignature: UInt32 = 0x0201_4b50
    static let localSignature: UInt32 = 0x0403_4b50
    static let entryHeaderSize = 46
    static let localHeaderSize = 30
    static let descriptorSignature: UInt32 = 0x0807_4b50
    /// General purpose flags: the entry is encrypted; its CRC and sizes follow its data.
    static let encryptedFlag: UInt16 = 1, descriptorFlag: UInt16 = 8

    /// Reads the end-of-central-directory record (the last one, allowing a trailing comment) and
    /// every central directory entry it points to.
    init(_ bytes: [UInt8]) throws(ZipProblem) {
        guard bytes.count >= Self.endRecordSize else { throw ZipProblem("the upload is not a zip file (too short)") }
        // The record is 22 bytes plus a comment of at most 65,535 bytes, at the very end.
        let lowest = max(0, bytes.count - Self.endRecordSize - 65_535)
        var position = bytes.count - Self.endRecordSize
        var end: Int?
        while position >= lowest {
            if Self.u32(bytes, position) == Self.endSignature, position + Self.endRecordSize + Int(Self.u16(bytes, position + 20)) == bytes.count {
                end = position
                break
            }
            position -= 1
        }
        guard let end else { throw ZipProblem("the upload is not a zip file (no end of central directory record)") }
        guard Self.u16(bytes, end + 4) == 0, Self.u16(bytes, end + 6) == 0 else { throw ZipProblem("multi-disk zips are not supported") }
        let count = Int(Self.u16(bytes, end + 10))
        let size = Int(Self.u32(bytes, end + 12)), offset = Int(Self.u32(bytes, end + 16))
        guard count != 0xFFFF, size != 0xFFFF_FFFF, offset != 0xFFFF_FFFF else { throw ZipProblem("zip64 archives are not supported") }
        guard Int(Self.u16(bytes, end + 8)) == count else { throw ZipProblem("the central directory's entry counts disagree") }
        guard offset + size <= end else { throw ZipProblem("the central directory lies outside the file") }

        var listings: [Listing] = []
        var cursor = offset
        for index in 0..<count {
            guard cursor + Self.entryHeaderSize <= offset + size, Self.u32(bytes, cursor) == Self.entrySignature else {
                throw ZipProblem("central directory entry \(index + 1) of \(count) is damaged")
            }
            let flags = Self.u16(bytes, cursor + 8), method = Self.u16(bytes, cursor + 10)
            let nameLength = Int(Self.u16(bytes, cursor + 28))
            let next = cursor + Self.entryHeaderSize + nameLength + Int(Self.u16(bytes, cursor + 30)) + Int(Self.u16(bytes, cursor + 32))
            guard next <= offset + size else { throw ZipProblem("central directory entry \(index + 1) of \(count) runs past the directory") }
            let nameBytes = bytes[(cursor + Self.entryHeaderSize)..<(cursor + Self.entryHeaderSize + nameLength)]
            guard let name = String(validating: nameBytes, as: UTF8.self) else {
                throw ZipProblem("entry \(index + 1) has a name that is not UTF-8")
            }
            let quoted = String(name.prefix(100)).debugDescription
            guard flags & Self.encryptedFlag == 0 else { throw ZipProblem("entry \(quoted) is encrypted") }
            guard method == 0 || method == 8 else {
                throw ZipProblem("entry \(quoted) uses compression method \(method); the SDKs read only stored (0) and deflated (8) entries")
            }
            let local = Int(Self.u32(bytes, cursor + 42))
            guard local + Self.localHeaderSize <= offset, Self.u32(bytes, local) == Self.localSignature else {
                throw ZipProblem("entry \(quoted) points to no local header")
            }
            let entry = Entry(name: name, method: method, compressedSize: Int(Self.u32(bytes, cursor + 20)),
                              uncompressedSize: Int(Self.u32(bytes, cursor + 24)), crc: Self.u32(bytes, cursor + 16),
                              externalAttributes: Self.u32(bytes, cursor + 38))
            listings.append(Listing(entry: entry, name: nameBytes, flags: flags, crc: entry.crc, local: local))
            cursor = next
        }
        try Self.walk(bytes, &listings, directoryOffset: offset)
        entries = listings.map(\.entry)
    }

    /// Walks the local headers from offset 0 as a streaming unzipper (Android's ZipInputStream)
    /// reads them: each must start exactly where the previous entry's data (and data descriptor)
    /// ends, agree with its directory entry (name, method, flags, CRC and sizes), and the last
    /// must end where the directory begins. Otherwise such a reader would see other names, or
    /// entries the directory does not list, than the checks made on the directory. Sets each
    /// entry's `dataOffset`.
    static func walk(_ bytes: [UInt8], _ listings: inout [Listing], directoryOffset: Int) throws(ZipProblem) {
        var position = 0
        var previous = "the start of the file"
        // By offset; entries sharing one keep the directory's order.
        for (index, listing) in listings.enumerated().sorted(by: { ($0.element.local, $0.offset) < ($1.element.local, $1.offset) }) {
            let entry = listing.entry, quoted = entry.quotedName, local = listing.local
            guard local >= position else { throw ZipProblem("entry \(quoted)'s local header overlaps \(previous)") }
            guard local == position else {
                throw ZipProblem("\(local - position) bytes between \(previous) and entry \(quoted) belong to no listed entry")
            }
            let flags = u16(bytes, local + 6), method = u16(bytes, local + 8)
            let nameStart = local + localHeaderSize, nameLength = Int(u16(bytes, local + 26))
            let dataStart = nameStart + nameLength + Int(u16(bytes, local + 28))
            guard dataStart <= directoryOffset else { throw ZipProblem("entry \(quoted)'s local header runs into the central directory") }
            listings[index].entry.dataOffset = dataStart
            guard bytes[nameStart..<(nameStart + nameLength)].elementsEqual(listing.name) else {
                let localName = String(String(decoding: bytes[nameStart..<(nameStart + nameLength)], as: UTF8.self).prefix(100)).debugDescription
                throw ZipProblem("entry \(quoted) is named \(localName) in its local header; both names must be the same")
            }
            guard method == entry.method else {
                throw ZipProblem("entry \(quoted) has compression method \(method) in its local header and \(entry.method) in the central directory")
            }
            let mask = encryptedFlag | descriptorFlag
            guard flags & mask == listing.flags & mask else {
                throw ZipProblem("entry \(quoted)'s local header and the central directory disagree on encryption or the data descriptor")
            }
            var end = dataStart + entry.compressedSize
            // CRC and sizes: in the local header, or after the data in a descriptor (its signature optional).
            var fields = local + 14
            if flags & descriptorFlag != 0 {
                guard method == 8 else {
                    throw ZipProblem("entry \(quoted) is stored with a data descriptor, which streaming unzippers cannot read; deflate it")
                }
                fields = end + 4 <= directoryOffset && u32(bytes, end) == descriptorSignature ? end + 4 : end
                end = fields + 12
            }
            guard end <= directoryOffset else { throw ZipProblem("entry \(quoted)'s data runs into the central directory") }
            guard u32(bytes, fields) == listing.crc, Int(u32(bytes, fields + 4)) == entry.compressedSize,
                Int(u32(bytes, fields + 8)) == entry.uncompressedSize else {
                throw ZipProblem("entry \(quoted)'s \(flags & descriptorFlag != 0 ? "data descriptor" : "local header") gives another CRC or size than the central directory")
            }
            position = end
            previous = "entry \(quoted)"
        }
        guard position == directoryOffset else {
            throw ZipProblem("\(directoryOffset - position) bytes between \(previous) and the central directory belong to no listed entry")
        }
    }

    static func u16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }

    static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
    }
}

/// Why an uploaded zip was refused.
struct ZipProblem: Error, Equatable, CustomStringConvertible {
    let message: String
    init(_ message: String) { self.message = message }
    var description: String { message }
}
