import Core

/// An app install as the Pushwoosh SDKs describe it in their requests: the device's identity,
/// push token and the fields registerDevice and applicationOpen carry.
public struct SDKDevice: Sendable {
    public var hwid: String
    /// Pushwoosh `device_type` (`Platform.iOS`, `Platform.android`, …).
    public var platform: Int
    public var token: String
    public var language: String?
    /// UTC offset in seconds. The iOS SDK sends it as a string, the Android SDK as a number.
    public var timezone: Int64?
    public var userID: String?
    /// `sandbox` or `production` (iOS).
    public var gateway: String?
    public var tags: [String: JSON]

    public init(_ hwid: String, platform: Int, token: String? = nil, language: String? = nil, timezone: Int64? = nil,
                userID: String? = nil, gateway: String? = nil, tags: [String: JSON] = [:]) {
        self.hwid = hwid
        self.platform = platform
        self.token = token ?? "token-\(hwid)"
        self.language = language
        self.timezone = timezone
        self.userID = userID
        self.gateway = gateway
        self.tags = tags
    }
}

/// A deterministic generator (SplitMix64), so that a population of devices, a token or a load run
/// can be reproduced exactly from its seed.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
