@testable import HTTP2Server
import Testing

/// What reaches nghttp2 of a client's bytes: everything but RST_STREAM frames of finished streams,
/// however the bytes are split between reads; and every RST_STREAM frame counted.
struct FrameFilterTests {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func frame(type: UInt8, stream: Int32, payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, 0,
                UInt8(stream >> 24 & 0x7f), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)] + payload
    }

    let settings = frame(type: 4, stream: 0, payload: [0, 3, 0, 0, 0, 100])
    let finishedReset = frame(type: 3, stream: 1, payload: [0, 0, 0, 5])
    let liveReset = frame(type: 3, stream: 3, payload: [0, 0, 0, 8])
    let data = frame(type: 0, stream: 5, payload: Array(repeating: 7, count: 40))

    /// Feeds `bytes` in pieces of `size`; stream 1 is finished, 3 and 5 live.
    func filter(_ bytes: [UInt8], pieces size: Int) -> (out: [UInt8], resets: Int) {
        var filter = FrameFilter()
        var out: [UInt8] = []
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + size)
            bytes[start..<end].withUnsafeBufferPointer { piece in
                filter.pass(piece, into: &out) { $0 == 1 }
            }
            start = end
        }
        return (out, filter.resetsSeen)
    }

    @Test func onlyResetsOfFinishedStreamsAreLeftOut() {
        let input = Self.preface + settings + finishedReset + liveReset + data + finishedReset
        let expected = Self.preface + settings + liveReset + data
        for size in [1, 2, 5, 9, 13, 24, 64, input.count] {
            let (out, resets) = filter(input, pieces: size)
            #expect(out == expected, "pieces of \(size)")
            // Every reset is counted, the dropped ones too.
            #expect(resets == 3, "pieces of \(size)")
        }
    }
}
