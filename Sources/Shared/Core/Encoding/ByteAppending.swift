extension Array where Element == UInt8 {
    /// Appends the UTF-8 bytes of `text` with one copy from its storage (a string of foreign
    /// storage is made contiguous first).
    @inlinable
    public mutating func appendUTF8(_ text: String) {
        var text = text
        text.withUTF8 { append(contentsOf: $0) }
    }

    /// Appends the bytes of `literal` with one copy.
    @inlinable
    public mutating func appendUTF8(_ literal: StaticString) {
        literal.withUTF8Buffer { append(contentsOf: $0) }
    }
}
