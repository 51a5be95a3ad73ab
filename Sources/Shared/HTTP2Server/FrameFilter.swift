/// Walks the HTTP/2 frames a client sends (after the 24-byte connection preface) and leaves out the
/// RST_STREAM frames that reset a stream already finished.
///
/// Why: libcurl 7.88 (Debian 12's, which Herald delivers with) sends RST_STREAM(STREAM_CLOSED) after
/// nearly every completed stream, and libnghttp2 1.52 as Debian 12 patches it (the CVE-2023-44487
/// "rapid reset" fix) counts every RST_STREAM a client sends and ends the connection with GOAWAY
/// after a burst of about 1,000. A provider connection would then be torn down every thousand
/// pushes, and the requests in flight re-sent on a new one, which Apple and Google never do. A reset
/// of a finished stream means nothing to the session, so it is dropped before nghttp2 counts it;
/// resets of live streams pass as they are.
struct FrameFilter {
    static let prefaceLength = 24
    static let headerLength = 9
    static let rstStream: UInt8 = 3

    /// RST_STREAM frames seen so far, dropped or not.
    private(set) var resetsSeen = 0
    private var prefaceLeft = prefaceLength
    private var header: [UInt8] = []
    /// Payload bytes of the current frame still to come, and whether they are dropped.
    private var payloadLeft = 0
    private var dropping = false

    /// Appends to `out` the bytes of `input` that go on to the session. `isFinished(stream)` says
    /// whether a stream is over (its RST_STREAM is then dropped).
    mutating func pass(_ input: UnsafeBufferPointer<UInt8>, into out: inout [UInt8], isFinished: (Int32) -> Bool) {
        var index = 0
        while index < input.count {
            if prefaceLeft > 0 {
                let count = min(prefaceLeft, input.count - index)
                out.append(contentsOf: input[index..<(index + count)])
                prefaceLeft -= count
                index += count
            } else if payloadLeft > 0 {
                let count = min(payloadLeft, input.count - index)
                if !dropping { out.append(contentsOf: input[index..<(index + count)]) }
                payloadLeft -= count
                index += count
            } else {
                header.append(input[index])
                index += 1
                guard header.count == Self.headerLength else { continue }
                payloadLeft = Int(header[0]) << 16 | Int(header[1]) << 8 | Int(header[2])
                if header[3] == Self.rstStream { resetsSeen += 1 }
                let stream = Int32(header[5] & 0x7f) << 24 | Int32(header[6]) << 16 | Int32(header[7]) << 8 | Int32(header[8])
                dropping = header[3] == Self.rstStream && payloadLeft == 4 && stream != 0 && isFinished(stream)
                if !dropping { out.append(contentsOf: header) }
                header.removeAll(keepingCapacity: true)
            }
        }
    }
}
