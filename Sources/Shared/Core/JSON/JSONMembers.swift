/// The members of a JSON object in the order they were sent, a repeated name holding its last
/// value: what a request object is read from. A name is found by comparing its `NameFingerprint`
/// with each member's (an SDK request names about ten), and the names only where those match,
/// which costs less than hashing it with Swift's seeded hasher; an object of `indexedFrom` members
/// or more is also indexed by name, so that a hostile one costs no more than a dictionary.
public struct JSONMembers: Sendable {
    /// From this many members on, names are looked up in `index`.
    static let indexedFrom = 16

    public private(set) var members: [(name: String, value: JSON)] = []
    private var fingerprints: [UInt64] = []
    private var index: [String: Int]?

    /// Room for `capacity` members, so that a typical request object is not copied as it grows.
    public init(capacity: Int = 0) {
        members.reserveCapacity(capacity)
        fingerprints.reserveCapacity(capacity)
    }

    public init(_ fields: [String: JSON]) {
        self.init(capacity: fields.count)
        for (name, value) in fields { _ = set(value, for: name) }
    }

    public var count: Int { members.count }

    public var names: [String] { members.map(\.name) }

    public subscript(name: String) -> JSON? {
        position(of: name, NameFingerprint.of(name)).map { members[$0].value }
    }

    /// Sets the member `name` to `value` (in place when the object names it already); false when
    /// it did.
    public mutating func set(_ value: JSON, for name: String) -> Bool {
        let fingerprint = NameFingerprint.of(name)
        if let position = position(of: name, fingerprint) {
            members[position].value = value
            return false
        }
        members.append((name, value))
        fingerprints.append(fingerprint)
        if index != nil {
            index?[name] = members.count - 1
        } else if members.count >= Self.indexedFrom {
            index = Dictionary(uniqueKeysWithValues: members.indices.map { (members[$0].name, $0) })
        }
        return true
    }

    /// The members as a dictionary, for what reads a whole object.
    public var dictionary: [String: JSON] {
        Dictionary(uniqueKeysWithValues: members.lazy.map { ($0.name, $0.value) })
    }

    private func position(of name: String, _ fingerprint: UInt64) -> Int? {
        if let index { return index[name] }
        for position in fingerprints.indices where fingerprints[position] == fingerprint && members[position].name == name {
            return position
        }
        return nil
    }
}
