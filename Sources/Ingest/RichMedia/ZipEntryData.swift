internal import CZlib

/// What an entry's data really holds, found by unpacking it rather than by trusting its headers: a
/// stored entry's sizes must agree, a deflated entry's stream must end exactly where its data does,
/// and the bytes produced must be as many as the headers declare, with the CRC-32 they state.
/// Inflating stops one byte past the declared size, so a zip that lies about its size costs the
/// check no more than what it declared.
enum ZipEntryData {
    /// Bytes inflated per step.
    static let chunk = 64 * 1024

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
    /// stops once more than `limit` bytes came out (the size it reports is then `limit + 1`).
    static func inflate(_ data: ArraySlice<UInt8>, limit: Int, quoted: String) throws(ZipProblem) -> (size: Int, crc: UInt32) {
        var stream = z_stream()
        guard herald_inflate_init_raw(&stream) == Z_OK else { throw ZipProblem("entry \(quoted) could not be unpacked (zlib: out of memory)") }
        defer { inflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: chunk)
        var produced = 0
        var crc = CZlib.crc32(0, nil, 0)
        var status = Z_OK
        var message: String?
        data.withUnsafeBufferPointer { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.avail_in = UInt32(input.count)
            output.withUnsafeMutableBufferPointer { buffer in
                while status == Z_OK && produced <= limit {
                    let room = min(buffer.count, limit + 1 - produced)
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = UInt32(room)
                    status = CZlib.inflate(&stream, Z_NO_FLUSH)
                    let count = room - Int(stream.avail_out)
                    crc = CZlib.crc32(crc, buffer.baseAddress, UInt32(count))
                    produced += count
                }
            }
            if let text = stream.msg { message = String(cString: text) }
            // What the stream left unread (zlib's pointers die with the buffer).
            stream.next_in = nil
        }
        let unread = Int(stream.avail_in)
        if produced > limit {
            throw ZipProblem("entry \(quoted) unpacks to more than the \(limit) bytes its headers declare (unpacking stopped there)")
        }
        switch status {
        case Z_STREAM_END:
            guard unread == 0 else {
                throw ZipProblem("entry \(quoted)'s deflate stream ends \(unread) bytes before its data does")
            }
            return (produced, UInt32(crc))
        case Z_OK, Z_BUF_ERROR:
            throw ZipProblem("entry \(quoted)'s deflated data ends before its deflate stream does")
        default:
            throw ZipProblem("entry \(quoted)'s deflated data is damaged (zlib: \(message ?? "error \(status)"))")
        }
    }

    /// The CRC-32 of a byte slice (zlib's, the zip format's).
    static func crc32(_ data: ArraySlice<UInt8>) -> UInt32 {
        UInt32(data.withUnsafeBufferPointer { CZlib.crc32(0, $0.baseAddress, UInt32($0.count)) })
    }

    static func hex(_ crc: UInt32) -> String {
        let digits = String(crc, radix: 16)
        return String(repeating: "0", count: 8 - digits.count) + digits
    }
}
