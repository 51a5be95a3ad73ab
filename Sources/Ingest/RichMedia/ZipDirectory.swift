/// The central directory of a zip file, read without unpacking anything: what Herald checks
/// before it stores a rich media page. Only single-disk, non-zip64 archives are read (a page is
/// far below 4 GB); every structural problem is a `ZipProblem` naming what is wrong.
struct ZipDirectory: Equatable {
    struct Entry: Equatable {
        var name: String
        /// 0 stored, 8 deflated.
        var method: UInt16
        var compressedSize: Int
        var uncompressedSize: Int
        var isDirectory: Bool { name.hasSuffix("/") }
    }

    var entries: [Entry]

    static let endRecordSize = 22
    static let endSignature: UInt32 = 0x0605_4b50
    static let entrySignature: UInt32 = 0x0201_4b50
    static let localSignature: UInt32 = 0x0403_4b50
    static let entryHeaderSize = 46

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

        var entries: [Entry] = []
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
            guard flags & 1 == 0 else { throw ZipProblem("entry \(quoted) is encrypted") }
            guard method == 0 || method == 8 else {
                throw ZipProblem("entry \(quoted) uses compression method \(method); the SDKs read only stored (0) and deflated (8) entries")
            }
            let local = Int(Self.u32(bytes, cursor + 42))
            guard local + 30 <= offset, Self.u32(bytes, local) == Self.localSignature else {
                throw ZipProblem("entry \(quoted) points to no local header")
            }
            entries.append(Entry(name: name, method: method, compressedSize: Int(Self.u32(bytes, cursor + 20)),
                                 uncompressedSize: Int(Self.u32(bytes, cursor + 24))))
            cursor = next
        }
        self.entries = entries
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
