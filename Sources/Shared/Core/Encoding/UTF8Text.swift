extension String {
    /// The string of UTF-8 `bytes`, invalid sequences replaced as `String(decoding:as:)` replaces
    /// them. Up to 15 bytes, the most a string holds without a buffer of its own, are copied in
    /// place and checked only when they are not ASCII; longer text goes through `String(decoding:as:)`.
    @inlinable
    public init(utf8 bytes: UnsafeRawBufferPointer) {
        let count = bytes.count
        guard let source = bytes.baseAddress, count > 0 else {
            self = ""
            return
        }
        guard count <= 15 else {
            self = String(decoding: bytes, as: UTF8.self)
            return
        }
        self = String(unsafeUninitializedCapacity: count) { buffer in
            UnsafeMutableRawPointer(buffer.baseAddress!).copyMemory(from: source, byteCount: count)
            return count
        }
    }
}
