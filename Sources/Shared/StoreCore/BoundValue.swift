/// A value a backend binds to a statement parameter. The shared store rules build their values
/// through these six, so that each backend's own value type carries them to its driver.
public protocol BoundValue: Sendable {
    static var null: Self { get }
    static func integer(_ value: Int64) -> Self
    static func real(_ value: Double) -> Self
    static func text(_ value: String) -> Self
    static func bytes(_ value: [UInt8]) -> Self
    /// A list of texts, read in a statement through `StatementRunner.entries(of:)`.
    static func textList(_ values: [String]) -> Self
}

extension BoundValue {
    @inlinable public static func optional(_ text: String?) -> Self { text.map(Self.text) ?? .null }
    @inlinable public static func optional(_ number: Int64?) -> Self { number.map(Self.integer) ?? .null }
    @inlinable public static func optional(_ number: Int?) -> Self { number.map { .integer(Int64($0)) } ?? .null }
}

/// Where a statement's parameter values go, in parameter order: an array bound later, or a
/// statement that binds each as it comes (SQLite's `SQLiteBinder`).
public protocol ParameterSink {
    associatedtype Value: BoundValue
    mutating func append(_ value: Value)
}

extension Array: ParameterSink where Element: BoundValue {}

/// The parameters of a statement being built, in the backend's placeholder syntax.
package protocol StatementParameters {
    associatedtype Value: BoundValue

    /// Adds `value` and returns the placeholder that stands for it.
    mutating func add(_ value: Value) -> String

    /// The placeholder for `value` used once more, where it was first added as `placeholder`:
    /// positional placeholders (`?`) add it again, numbered ones (`$n`) name it again.
    mutating func again(_ value: Value, as placeholder: String) -> String
}
