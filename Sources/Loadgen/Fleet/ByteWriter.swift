/// Appends request bytes into a fixed buffer without allocating: the request builders write
/// straight into a connection's send buffer. Past the capacity it stops writing and sets
/// `overflowed` (the caller treats that request as not buildable).
struct ByteWriter {
    let base: UnsafeMutableRawPointer
    let capacity: Int
    private(set) var count = 0
    private(set) var overflowed = false

    init(_ buffer: UnsafeMutableRawBufferPointer, offset: Int = 0) {
        base = buffer.baseAddress! + offset
        capacity = buffer.count - offset
    }

    /// The bytes written so far.
    var written: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    @inline(__always)
    private mutating func reserve(_ needed: Int) -> Bool {
        if count + needed > capacity {
            overflowed = true
            return false
        }
        return true
    }

    @inline(__always)
    mutating func byte(_ value: UInt8) {
        guard reserve(1) else { return }
        base.storeBytes(of: value, toByteOffset: count, as: UInt8.self)
        count += 1
    }

    @inline(__always)
    mutating func append(_ text: StaticString) {
        let length = text.utf8CodeUnitCount
        guard reserve(length) else { return }
        (base + count).copyMemory(from: text.utf8Start, byteCount: length)
        count += length
    }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0, reserve(bytes.count) else { return }
        (base + count).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        count += bytes.count
    }

    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// A JSON string of bytes that need no escaping (the builders only use such values).
    mutating func quoted(_ text: StaticString) {
        byte(UInt8(ascii: "\""))
        append(text)
        byte(UInt8(ascii: "\""))
    }

    mutating func quoted(_ bytes: [UInt8]) {
        byte(UInt8(ascii: "\""))
        append(bytes)
        byte(UInt8(ascii: "\""))
    }

    /// Decimal digits of `value`.
    mutating func int(_ value: Int64) {
        guard reserve(20) else { return }
        var magnitude = value.magnitude
        if value < 0 {
            base.storeBytes(of: UInt8(ascii: "-"), toByteOffset: count, as: UInt8.self)
            count += 1
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes of scratch, filled from the end
        let length = withUnsafeMutableBytes(of: &digits) { scratch -> Int in
            var position = scratch.count
            repeat {
                position -= 1
                scratch[position] = UInt8(truncatingIfNeeded: magnitude % 10) + 48
                magnitude /= 10
            } while magnitude > 0
            let length = scratch.count - position
            (base + count).copyMemory(from: scratch.baseAddress! + position, byteCount: length)
            return length
        }
        count += length
    }

    mutating func int(_ value: Int) { int(Int64(value)) }

    /// `value` with exactly two decimals (`12.50`), for prices and balances.
    mutating func cents(_ cents: Int64) {
        int(cents / 100)
        byte(UInt8(ascii: "."))
        let fraction = cents % 100
        byte(UInt8(truncatingIfNeeded: fraction / 10) + 48)
        byte(UInt8(truncatingIfNeeded: fraction % 10) + 48)
    }

    /// The low `digits` hex digits of `value`, most significant first.
    mutating func hex(_ value: UInt64, digits: Int, uppercase: Bool = false) {
        guard reserve(digits) else { return }
        let letters: UInt8 = uppercase ? 55 : 87
        for position in 0..<digits {
            let nibble = UInt8(truncatingIfNeeded: value >> UInt64(4 * (digits - 1 - position))) & 0x0F
            base.storeBytes(of: nibble < 10 ? nibble + 48 : nibble + letters, toByteOffset: count + position, as: UInt8.self)
        }
        count += digits
    }

    /// An RFC 4122 version-4 UUID from 128 random bits: `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`.
    mutating func uuid(_ high: UInt64, _ low: UInt64, uppercase: Bool) {
        let versioned = (high & 0xFFFF_FFFF_FFFF_0FFF) | 0x0000_0000_0000_4000
        let variant = (low & 0x3FFF_FFFF_FFFF_FFFF) | 0x8000_0000_0000_0000
        hex(versioned >> 32, digits: 8, uppercase: uppercase)
        byte(UInt8(ascii: "-"))
        hex(versioned >> 16, digits: 4, uppercase: uppercase)
        byte(UInt8(ascii: "-"))
        hex(versioned, digits: 4, uppercase: uppercase)
        byte(UInt8(ascii: "-"))
        hex(variant >> 48, digits: 4, uppercase: uppercase)
        byte(UInt8(ascii: "-"))
        hex(variant, digits: 12, uppercase: uppercase)
    }

    /// `count` characters of the URL-safe base64 alphabet drawn from `seed` (FCM tokens).
    mutating func base64URL(_ seed: UInt64, count length: Int) {
        guard reserve(length) else { return }
        var state = seed
        var bits: UInt64 = 0
        var available = 0
        for position in 0..<length {
            if available < 6 {
                state = Mix.next(state)
                bits = state
                available = 64
            }
            let index = Int(bits & 63)
            bits >>= 6
            available -= 6
            base.storeBytes(of: Mix.base64URLAlphabet[index], toByteOffset: count + position, as: UInt8.self)
        }
        count += length
    }

    /// `yyyy-MM-dd HH:mm` (UTC) of unix seconds, the SDKs' date tag format.
    mutating func tagDate(_ seconds: Int64) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let minuteOfDay = (seconds - days * 86_400) / 60
        // Civil from days (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        int(year)
        byte(UInt8(ascii: "-"))
        twoDigits(month)
        byte(UInt8(ascii: "-"))
        twoDigits(day)
        byte(UInt8(ascii: " "))
        twoDigits(minuteOfDay / 60)
        byte(UInt8(ascii: ":"))
        twoDigits(minuteOfDay % 60)
    }

    private mutating func twoDigits(_ value: Int64) {
        byte(UInt8(truncatingIfNeeded: value / 10) + 48)
        byte(UInt8(truncatingIfNeeded: value % 10) + 48)
    }
}
