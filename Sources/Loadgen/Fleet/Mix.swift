/// The hash every derived value comes from: SplitMix64's finalizer over (seed, key), so a device's
/// whole life is a function of the run's seed and its index.
enum Mix {
    @inline(__always)
    static func hash(_ a: UInt64, _ b: UInt64) -> UInt64 {
        var z = a &+ (b &+ 1) &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    @inline(__always)
    static func next(_ state: UInt64) -> UInt64 { hash(state, 0x5851_F42D_4C95_7F2D) }

    /// A number in [0, 1) from a hash.
    @inline(__always)
    static func unit(_ value: UInt64) -> Double { Double(value >> 11) * 0x1.0p-53 }

    static let base64URLAlphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
}
