extension Array where Element == UInt8 {
    /// Appends `value` in decimal, spelled as `String(value)` spells it, without making a string.
    @inlinable
    public mutating func appendDecimal(_ value: Int64) {
        if value < 0 { append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        // Least significant digit first, then turned around in place.
        let start = count
        repeat {
            append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude > 0
        self[start...].reverse()
    }
}
