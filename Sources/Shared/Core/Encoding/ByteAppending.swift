extension Array where Element == UInt8 {
    /// Appends the UTF-8 bytes of `text` with one copy from its storage (a literal's or a native
    /// string's own bytes; a string of foreign storage is made contiguous first).
    @inlinable
    public mutating func appendUTF8(_ text: String) {
        var text = text
        text.withUTF8 { append(contentsOf: $0) }
    }
}
