/// Values by name, for a table the program fills once (the API's methods, the configured
/// applications) and looks up with text a client sent. A name is found by its `NameFingerprint`,
/// which costs a few instructions a byte, where a `Dictionary` hashes it with the seeded SipHash; the
/// table's names are the program's own, so a client only ever chooses what it looks for, never how
/// the table is laid out.
///
/// Inlined where it is used: a generic call into this module would look up the metadata of its
/// types at run time.
public struct NameTable<Value: Sendable>: Sendable {
    @usableFromInline
    struct Entry: Sendable {
        @usableFromInline let fingerprint: UInt64
        @usableFromInline let name: String
        @usableFromInline let value: Value
    }

    /// Open addressing: a name's slot is its fingerprint's low bits, then the slots after it.
    @usableFromInline let slots: [Entry?]
    @usableFromInline let mask: Int
    public let count: Int

    /// The table of `entries`; a repeated name keeps its first value.
    public init(_ entries: some Sequence<(String, Value)>) {
        let entries = Array(entries)
        var capacity = 4
        while capacity < entries.count * 2 { capacity *= 2 }
        var slots = [Entry?](repeating: nil, count: capacity)
        var count = 0
        for (name, value) in entries {
            let fingerprint = NameFingerprint.of(name)
            let slot = Self.slot(of: name, fingerprint, in: slots, mask: capacity - 1)
            guard slots[slot] == nil else { continue }
            slots[slot] = Entry(fingerprint: fingerprint, name: name, value: value)
            count += 1
        }
        self.slots = slots
        mask = capacity - 1
        self.count = count
    }

    /// The table of `values`' names and values.
    public init(_ values: [String: Value]) { self.init(values.lazy.map { ($0.key, $0.value) }) }

    /// Every name and its value, in no particular order.
    public var entries: [(name: String, value: Value)] { slots.compactMap { $0.map { ($0.name, $0.value) } } }

    /// The name whose value is `value` (when several are, any one of them), found by visiting the
    /// slots in place.
    public func name(of value: Value) -> String? where Value: Equatable {
        for case let entry? in slots where entry.value == value { return entry.name }
        return nil
    }

    @inlinable
    public subscript(name: String) -> Value? {
        slots[Self.slot(of: name, NameFingerprint.of(name), in: slots, mask: mask)]?.value
    }

    /// The slot that holds `name`, or the empty one where it would go.
    @inlinable
    static func slot(of name: String, _ fingerprint: UInt64, in slots: [Entry?], mask: Int) -> Int {
        var slot = Int(truncatingIfNeeded: fingerprint) & mask
        while let entry = slots[slot], entry.fingerprint != fingerprint || entry.name != name { slot = (slot + 1) & mask }
        return slot
    }
}

/// FNV-1a of a name's UTF-8 bytes, a 64-bit fingerprint that equal names share: what `NameTable`
/// and `JSONMembers` compare before they compare names.
public enum NameFingerprint {
    @inlinable
    public static func of(_ name: String) -> UInt64 {
        func hash(_ bytes: some Sequence<UInt8>) -> UInt64 {
            var value: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes { value = (value ^ UInt64(byte)) &* 0x100_0000_01b3 }
            return value
        }
        return name.utf8.withContiguousStorageIfAvailable(hash) ?? hash(name.utf8)
    }
}
