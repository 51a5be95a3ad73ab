import Foundation

extension MessageSpec {
    /// The JSON text every store backend keeps for the message.
    public func storedText() throws -> String {
        String(decoding: try JSONEncoder().encode(self), as: UTF8.self)
    }

    /// A message read back from its `storedText()`.
    public init(storedText: String) throws {
        self = try JSONDecoder().decode(MessageSpec.self, from: Data(storedText.utf8))
    }
}

/// New identifiers of a stored message, the same in every backend.
public enum MessageIdentifiers {
    /// A message code in Pushwoosh's shape: 4, 8 and 8 hex digits.
    public static func newCode() -> String {
        func hex(_ count: Int) -> String { String((0..<count).map { _ in "0123456789ABCDEF".randomElement()! }) }
        return "\(hex(4))-\(hex(8))-\(hex(8))"
    }

    /// The payload hash `p`: opaque base-62, no `-`, so the iOS SDK treats it as opaque.
    public static func newHash() -> String {
        let alphabet = Array("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
        return String((0..<16).map { _ in alphabet.randomElement()! })
    }
}
