/// ZeroMQ's Z85 encoding (RFC 32): each 4 bytes, read as a big-endian 32-bit number, become 5
/// characters of an 85-character alphabet, most significant first. ZeroMQ writes CURVE keys in it
/// (32 bytes, 40 characters). Pure Swift, so that the configuration is checked without libzmq.
public enum Z85 {
    static let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#".utf8)

    /// Each ASCII byte's place in the alphabet; nil for bytes outside it.
    static let values: [UInt8?] = {
        var values = [UInt8?](repeating: nil, count: 128)
        for (index, byte) in alphabet.enumerated() { values[Int(byte)] = UInt8(index) }
        return values
    }()

    /// Why a text is not Z85. It says where, never which character: the text may be a secret key.
    public struct Error: Swift.Error, Sendable, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// The text of `bytes`; nil when their count is not a multiple of 4.
    public static func encode(_ bytes: [UInt8]) -> String? {
        guard bytes.count % 4 == 0 else { return nil }
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count / 4 * 5)
        for start in stride(from: 0, to: bytes.count, by: 4) {
            var value = bytes[start..<start + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            var group = [UInt8](repeating: 0, count: 5)
            for index in (0..<5).reversed() {
                group[index] = alphabet[Int(value % 85)]
                value /= 85
            }
            text += group
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes `text` encodes. Fails when its length is not a multiple of 5, a character is not
    /// in the alphabet, or a group of 5 stands for more than 2^32 − 1 (as libzmq's decoder does).
    public static func decode(_ text: some StringProtocol) throws(Error) -> [UInt8] {
        let characters = Array(text.utf8)
        guard characters.count % 5 == 0 else {
            throw Error(description: "\(characters.count) characters, not a multiple of 5")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 5 * 4)
        for start in stride(from: 0, to: characters.count, by: 5) {
            var value: UInt64 = 0
            for position in start..<start + 5 {
                let character = characters[position]
                guard character < 128, let digit = values[Int(character)] else {
                    throw Error(description: "character \(position + 1) is not in the Z85 alphabet")
                }
                value = value * 85 + UInt64(digit)
            }
            guard value <= UInt64(UInt32.max) else {
                throw Error(description: "characters \(start + 1)–\(start + 5) stand for more than 2^32 − 1")
            }
            bytes += [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) }
        }
        return bytes
    }
}
