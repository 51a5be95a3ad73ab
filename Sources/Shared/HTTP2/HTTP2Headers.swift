/// A response's header fields as they arrived, names lower-cased, looked up by name. The fields lie
/// end to end in one buffer (each name and value after its length), so that a response costs one
/// allocation for all its fields and no hashing.
public struct HTTP2Headers: Sendable, ExpressibleByDictionaryLiteral {
    private var fields: [UInt8] = []

    public init() {}

    /// The fields of `dictionary`, in no particular order.
    public init(_ dictionary: [String: String]) {
        for (name, value) in dictionary { append(name: Array(name.utf8), value: Array(value.utf8)) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { append(name: Array(name.utf8), value: Array(value.utf8)) }
    }

    public var isEmpty: Bool { fields.isEmpty }

    /// Adds a field after the others.
    mutating func append<Name: Collection<UInt8>, Value: Collection<UInt8>>(name: Name, value: Value) {
        appendLength(name.count)
        fields.append(contentsOf: name)
        appendLength(value.count)
        fields.append(contentsOf: value)
    }

    /// The value of the last field named `name` (lower-case), nil when there is none.
    public subscript(name: String) -> String? {
        var name = name
        return name.withUTF8 { wanted in
            fields.withUnsafeBufferPointer { bytes in
                var found: String?
                var offset = 0
                while offset < bytes.count {
                    let nameLength = Self.length(bytes, at: offset)
                    let nameStart = offset + 4
                    let valueLength = Self.length(bytes, at: nameStart + nameLength)
                    let valueStart = nameStart + nameLength + 4
                    if nameLength == wanted.count, UnsafeBufferPointer(rebasing: bytes[nameStart..<nameStart + nameLength]).elementsEqual(wanted) {
                        found = String(decoding: bytes[valueStart..<valueStart + valueLength], as: UTF8.self)
                    }
                    offset = valueStart + valueLength
                }
                return found
            }
        }
    }

    private mutating func appendLength(_ length: Int) {
        let value = UInt32(clamping: length)
        for shift in stride(from: 0, to: 32, by: 8) { fields.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    private static func length(_ bytes: UnsafeBufferPointer<UInt8>, at offset: Int) -> Int {
        var value = 0
        for index in 0..<4 { value |= Int(bytes[offset + index]) << (8 * index) }
        return value
    }
}
