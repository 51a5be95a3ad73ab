import Inflate

/// What an entry's data really holds, found by unpacking it rather than by trusting its headers: a
/// stored entry's sizes must agree, a deflated entry's stream must end exactly where its data does,
/// and the bytes produced must be as many as the headers declare, with the CRC-32 they state.
/// Inflating stops one byte past the declared size, so a zip that lies about its size costs the
/// check no more than what it declared.
enum ZipEntryData {
    /// Checks one entry of `bytes` (whose `dataOffset` `ZipDirectory.walk` has set).
    static func verify(_ bytes: [UInt8], _ entry: ZipDirectory.Entry) throws(ZipProblem) {
        let quoted = entry.quotedName
        let data = bytes[entry.dataOffset..<(entry.dataOffset + entry.compressedSize)]
        let found: (size: Int, crc: UInt32)
        switch entry.method {
        case 0:
            guard entry.compressedSize == entry.uncompressedSize else {
                throw ZipProblem("entry \(quoted) is stored (not compressed) but declares \(entry.compressedSize) bytes stored "
                                 + "and \(entry.uncompressedSize) unpacked")
            }
            found = (data.count, crc32(data))
        default:
            found = try inflate(data, limit: entry.uncompressedSize, quoted: quoted)
        }
        guard found.size == entry.uncompressedSize else {
            throw ZipProblem("entry \(quoted) unpacks to \(found.size) bytes; its headers declare \(entry.uncompressedSize)")
        }
        guard found.crc == entry.crc else {
            throw ZipProblem("entry \(quoted) has CRC-32 \(hex(entry.crc)) in its headers but \(hex(found.crc)) once unpacked")
        }
    }

    /// Inflates a raw deflate stream, counting and checksumming what it produces without keeping it;
    /// stops once more than `limit` bytes came out.
    static func inflate(_ data: ArraySlice<UInt8>, limit: Int, quoted: String) throws(ZipProblem) -> (size: Int, crc: UInt32) {
        switch RawInflate.measure(data, limit: limit) {
        case .overLimit:
            throw ZipProblem("entry \(quoted) unpacks to more than the \(limit) bytes its headers declare (unpacking stopped there)")
        case .ended(_, _, let unread) where unread > 0:
            throw ZipProblem("entry \(quoted)'s deflate stream ends \(unread) bytes before its data does")
        case .ended(let size, let crc, _):
            return (size, crc)
        case .truncated:
            throw ZipProblem("entry \(quoted)'s deflated data ends before its deflate stream does")
        case .damaged(let message):
            throw ZipProblem("entry \(quoted)'s deflated data is damaged (zlib: \(message))")
        }
    }

    /// The CRC-32 of a byte slice.
    static func crc32(_ data: ArraySlice<UInt8>) -> UInt32 { RawInflate.crc32(data) }

    static func hex(_ crc: UInt32) -> String {
        let digits = String(crc, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }
}
