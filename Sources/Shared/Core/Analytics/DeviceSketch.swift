import Foundation

/// A mergeable count of distinct devices. Up to `exactLimit` devices it keeps their 64-bit hashes
/// and counts exactly; past that it turns into a HyperLogLog of 2^12 registers (4 KiB, standard
/// error 1.6%). The per-day rollups store one sketch per (day, event) and per day, so that the
/// distinct devices of any run of days is a merge of at most a few hundred sketches instead of a
/// pass over millions of (device, day) rows.
public struct DeviceSketch: Sendable, Equatable {
    static let precision = 12
    static let registerCount = 1 << precision
    static let exactLimit = 512

    private enum Storage: Equatable {
        case exact(Set<UInt64>)
        case registers([UInt8])
    }

    private var storage: Storage = .exact([])

    public init() {}

    /// Reads a sketch stored by `encoded`; nil for bytes it did not write.
    public init?(encoded bytes: [UInt8]) {
        guard let kind = bytes.first else { return nil }
        switch kind {
        case 0 where (bytes.count - 1) % 8 == 0:
            var hashes = Set<UInt64>()
            for offset in stride(from: 1, to: bytes.count, by: 8) {
                var value: UInt64 = 0
                for index in 0..<8 { value |= UInt64(bytes[offset + index]) << (8 * index) }
                hashes.insert(value)
            }
            storage = .exact(hashes)
        case 1 where bytes.count == 1 + Self.registerCount:
            storage = .registers(Array(bytes[1...]))
        default:
            return nil
        }
    }

    /// Kind byte (0 exact, 1 registers), then the hashes (little-endian) or the registers.
    public var encoded: [UInt8] {
        switch storage {
        case .exact(let hashes):
            var bytes: [UInt8] = [0]
            bytes.reserveCapacity(1 + 8 * hashes.count)
            for hash in hashes.sorted() {
                for index in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: hash >> (8 * index))) }
            }
            return bytes
        case .registers(let registers):
            return [1] + registers
        }
    }

    public mutating func insert(_ device: String) { insert(hash: Self.hash(device)) }

    public mutating func formUnion(_ other: DeviceSketch) {
        switch other.storage {
        case .exact(let hashes):
            for hash in hashes { insert(hash: hash) }
        case .registers(let theirs):
            var mine = registers()
            storage = .exact([])  // drop the second reference, so that `mine` is changed in place
            for index in 0..<Self.registerCount where theirs[index] > mine[index] { mine[index] = theirs[index] }
            storage = .registers(mine)
        }
    }

    /// The number of distinct devices: exact while small, else the HyperLogLog estimate.
    public var count: Int {
        switch storage {
        case .exact(let hashes):
            return hashes.count
        case .registers(let registers):
            let m = Double(Self.registerCount)
            var sum = 0.0
            var zeros = 0
            for register in registers {
                sum += 1 / Double(UInt64(1) << register)
                if register == 0 { zeros += 1 }
            }
            let raw = 0.7213 / (1 + 1.079 / m) * m * m / sum
            // Linear counting is the better estimate while many registers are still empty.
            let estimate = raw <= 2.5 * m && zeros > 0 ? m * log(m / Double(zeros)) : raw
            return Int(estimate.rounded())
        }
    }

    private mutating func insert(hash: UInt64) {
        // Each case first drops `storage`'s reference, so that the bound copy is changed in place.
        switch storage {
        case .exact(var hashes):
            storage = .exact([])
            hashes.insert(hash)
            if hashes.count > Self.exactLimit {
                storage = .registers(Self.registers(of: hashes))
            } else {
                storage = .exact(hashes)
            }
        case .registers(var registers):
            storage = .exact([])
            Self.add(hash, to: &registers)
            storage = .registers(registers)
        }
    }

    private func registers() -> [UInt8] {
        switch storage {
        case .exact(let hashes): return Self.registers(of: hashes)
        case .registers(let registers): return registers
        }
    }

    private static func registers(of hashes: Set<UInt64>) -> [UInt8] {
        var registers = [UInt8](repeating: 0, count: registerCount)
        for hash in hashes { add(hash, to: &registers) }
        return registers
    }

    private static func add(_ hash: UInt64, to registers: inout [UInt8]) {
        let index = Int(hash >> UInt64(64 - precision))
        let rank = UInt8(min((hash << UInt64(precision)).leadingZeroBitCount, 64 - precision) + 1)
        if rank > registers[index] { registers[index] = rank }
    }

    /// FNV-1a over the UTF-8 bytes, then the SplitMix64 finalizer to spread the bits.
    static func hash(_ device: String) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in device.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        hash = (hash ^ (hash >> 30)) &* 0xBF58_476D_1CE4_E5B9
        hash = (hash ^ (hash >> 27)) &* 0x94D0_49BB_1331_11EB
        return hash ^ (hash >> 31)
    }
}
