/// Reads one JSON object of the configuration file (or of a request read as strictly, such as an
/// in-app's body) while tracking the key path, so that every error names the exact key. Unknown
/// keys are rejected: a typo must not silently fall back to a default.
public struct ConfigReader {
    let path: String
    let members: [String: JSON]
    private(set) var known: Set<String> = []

    public init(_ value: JSON, path: String) throws(ConfigurationError) {
        guard case .object(let members) = value else {
            throw ConfigurationError(key: path, problem: "expected an object, found \(value.typeName)")
        }
        self.path = path
        self.members = members
    }

    func keyPath(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// The member `key` (nil when absent or null), now a known key.
    public mutating func value(_ key: String) -> JSON? {
        known.insert(key)
        guard let value = members[key], value != .null else { return nil }
        return value
    }

    mutating func string(_ key: String) throws(ConfigurationError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else {
            throw ConfigurationError(key: keyPath(key), problem: "expected a string, found \(value.typeName)")
        }
        return text
    }

    mutating func requiredString(_ key: String) throws(ConfigurationError) -> String {
        guard let text = try string(key) else { throw ConfigurationError(key: keyPath(key), problem: "is required") }
        guard !text.isEmpty else { throw ConfigurationError(key: keyPath(key), problem: "must not be empty") }
        return text
    }

    /// A string or a non-empty list of strings, as a list; `what` names one item in the error.
    mutating func strings(_ key: String, what: String) throws(ConfigurationError) -> [String]? {
        guard let value = value(key) else { return nil }
        switch value {
        case .string(let text): return [text]
        case .array(let items) where !items.isEmpty && items.allSatisfy({ $0.stringValue != nil }): return items.compactMap(\.stringValue)
        default: throw ConfigurationError(key: keyPath(key), problem: "expected \(what) or a non-empty list of them, found \(value.typeName)")
        }
    }

    mutating func int(_ key: String, default fallback: Int, range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard let value = value(key) else { return fallback }
        guard case .int(let number) = value else {
            let found = value.typeName == "number" ? "a decimal number" : value.typeName
            throw ConfigurationError(key: keyPath(key), problem: "expected an integer, found \(found)")
        }
        guard range.contains(Int(number)) else {
            throw ConfigurationError(
                key: keyPath(key), problem: "must be between \(range.lowerBound) and \(range.upperBound), found \(number)")
        }
        return Int(number)
    }

    mutating func bool(_ key: String, default fallback: Bool) throws(ConfigurationError) -> Bool {
        guard let value = value(key) else { return fallback }
        guard case .bool(let flag) = value else {
            throw ConfigurationError(key: keyPath(key), problem: "expected true or false, found \(value.typeName)")
        }
        return flag
    }

    /// A number, integer or decimal, within `range`.
    mutating func number(_ key: String, default fallback: Double, range: ClosedRange<Double>) throws(ConfigurationError) -> Double {
        guard let value = value(key) else { return fallback }
        let number: Double
        switch value {
        case .int(let integer): number = Double(integer)
        case .double(let decimal): number = decimal
        default: throw ConfigurationError(key: keyPath(key), problem: "expected a number, found \(value.typeName)")
        }
        guard range.contains(number) else {
            throw ConfigurationError(key: keyPath(key), problem: "must be between \(range.lowerBound) and \(range.upperBound), found \(number)")
        }
        return number
    }

    mutating func object(_ key: String) throws(ConfigurationError) -> ConfigReader? {
        guard let value = value(key) else { return nil }
        return try ConfigReader(value, path: keyPath(key))
    }

    /// Fails on any key that was never asked for.
    public func finish() throws(ConfigurationError) {
        if let unknown = members.keys.sorted().first(where: { !known.contains($0) }) {
            throw ConfigurationError(key: keyPath(unknown), problem: "unknown key")
        }
    }
}
