/// One change requested by `setTags` (or `registerDevice.tags`, or the OneSignal helper).
public struct TagUpdate: Sendable, Equatable {
    public enum Operation: Sendable, Equatable {
        /// Set the tag to this value (typed against the tag's definition).
        case set(JSON)
        /// `{"operation": "increment", "value": n}`.
        case increment(JSON)
        /// `{"operation": "append", "value": [...]}`.
        case append([String])
        /// `{"operation": "remove", "value": [...]}`.
        case remove([String])
        /// `null`: remove the tag from the device.
        case delete
    }

    public let name: String
    public let operation: Operation

    public init(name: String, operation: Operation) {
        self.name = name
        self.operation = operation
    }

    /// Parses a `tags` object; errors name the tag.
    public static func parse(_ tags: [String: JSON], field: String = "tags") throws(TagError) -> [TagUpdate] {
        var updates: [TagUpdate] = []
        for name in tags.keys.sorted() {
            let value = tags[name]!
            guard !name.isEmpty, name.utf8.count <= 128 else {
                throw TagError("\(field): tag names must be 1 to 128 bytes long")
            }
            switch value {
            case .null:
                updates.append(TagUpdate(name: name, operation: .delete))
            case .object(let members):
                guard let operation = members["operation"]?.stringValue else {
                    throw TagError("\(field).\(name): an object value needs \"operation\" (increment, append or remove)")
                }
                let operand = members["value"] ?? .null
                switch operation.lowercased() {
                case "increment":
                    guard operand.lenientDouble != nil else {
                        throw TagError("\(field).\(name): increment needs a numeric value")
                    }
                    updates.append(TagUpdate(name: name, operation: .increment(operand)))
                case "append", "remove":
                    let items: [String]
                    switch operand {
                    case .array(let values):
                        guard let strings = values.mapAll(\.lenientString) else {
                            throw TagError("\(field).\(name): \(operation) needs an array of strings")
                        }
                        items = strings
                    case .string(let single): items = [single]
                    default: throw TagError("\(field).\(name): \(operation) needs an array of strings")
                    }
                    // Only what is added must fit; an item stored before the cap can still be removed.
                    let appends = operation.lowercased() == "append"
                    if appends { try TagRules.checkListItems(items, field: "\(field).\(name)") }
                    updates.append(TagUpdate(name: name, operation: appends ? .append(items) : .remove(items)))
                default:
                    throw TagError("\(field).\(name): unknown operation \"\(operation)\" (use increment, append or remove)")
                }
            default:
                if case .array(let items) = value { try TagRules.checkListItems(items.lazy.compactMap(\.lenientString), field: "\(field).\(name)") }
                updates.append(TagUpdate(name: name, operation: .set(value)))
            }
        }
        return updates
    }
}

/// A tag value or operation that cannot be applied; the message names the tag.
public struct TagError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension Array {
    /// `map` that fails as a whole when any element maps to nil.
    public func mapAll<T>(_ transform: (Element) -> T?) -> [T]? {
        var result: [T] = []
        result.reserveCapacity(count)
        for element in self {
            guard let value = transform(element) else { return nil }
            result.append(value)
        }
        return result
    }
}
