internal import CZlib

/// zlib's raw deflate and CRC-32, to measure what compressed data unpacks to without keeping it.
public enum RawInflate {
    /// How a deflate stream ended.
    public enum Outcome: Equatable, Sendable {
        /// The stream ended after producing `size` bytes with `crc`; `unread` input bytes follow it.
        case ended(size: Int, crc: UInt32, unread: Int)
        /// The input ended before the stream did, after `size` bytes.
        case truncated(size: Int)
        /// More than the limit came out (inflating stopped there).
        case overLimit
        /// The data is not a valid deflate stream (zlib's message).
        case damaged(String)
    }

    /// Bytes inflated per step.
    static let chunk = 64 * 1024

    /// Inflates `data`, counting and checksumming what it produces; stops once more than `limit`
    /// bytes came out, so data that lies about its size costs no more than `limit`.
    public static func measure(_ data: ArraySlice<UInt8>, limit: Int) -> Outcome {
        var stream = z_stream()
        guard herald_inflate_init_raw(&stream) == Z_OK else { return .damaged("out of memory") }
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
            // zlib's pointers die with the buffer.
            stream.next_in = nil
        }
        if produced > limit { return .overLimit }
        switch status {
        case Z_STREAM_END: return .ended(size: produced, crc: UInt32(crc), unread: Int(stream.avail_in))
        case Z_OK, Z_BUF_ERROR: return .truncated(size: produced)
        default: return .damaged(message ?? "error \(status)")
        }
    }

    /// The CRC-32 of `data` (zlib's, the zip format's).
    public static func crc32(_ data: ArraySlice<UInt8>) -> UInt32 {
        UInt32(data.withUnsafeBufferPointer { CZlib.crc32(0, $0.baseAddress, UInt32($0.count)) })
    }
}
