/// 2^x, without Foundation.
func pow2(_ exponent: Double) -> Double {
    var result = 1.0
    var remaining = exponent
    while remaining >= 1 {
        result *= 2
        remaining -= 1
    }
    // 2^x for x in [0, 1) by a short series of e^(x ln 2).
    let y = remaining * 0.693_147_180_559_945_3
    var term = 1.0, sum = 1.0
    for n in 1..<20 {
        term *= y / Double(n)
        sum += term
    }
    return result * sum
}

/// A small deterministic generator for test data.
struct SplitMixForTests {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func unit() -> Double { Double(next() >> 11) * 0x1.0p-53 }
}
