import Core
import StoreCore

/// A value bound to a statement parameter. Scalars travel in PostgreSQL's text format (the server
/// parses them as the type it inferred for the parameter, so the SQL casts a parameter where its
/// type is ambiguous: `$1::bigint[]`); byte strings travel in binary format.
public enum PostgresValue: Sendable, Equatable, BoundValue {
    case null
    case integer(Int64)
    case double(Double)
    case boolean(Bool)
    case text(String)
    case bytea([UInt8])
    /// A one-dimensional array literal, for `= ANY($1::bigint[])` and `unnest`.
    case integers([Int64])
    /// Nil items become SQL NULL.
    case texts([String?])
    case doubles([Double])
    case booleans([Bool])

    /// A real number, as `BoundValue` names it.
    public static func real(_ number: Double) -> PostgresValue { .double(number) }
    /// A byte string, as `BoundValue` names it.
    public static func bytes(_ value: [UInt8]) -> PostgresValue { .bytea(value) }
    /// A list of texts, as `BoundValue` names it: an array literal.
    public static func textList(_ values: [String]) -> PostgresValue { .texts(values) }
}

/// The parameters of one statement laid out for libpq: every text value NUL-terminated in one
/// buffer, with each parameter's offset, length and format (0 text, 1 binary).
struct ParameterBuffer {
    var bytes: [UInt8] = []
    var offsets: [Int?] = []
    var lengths: [Int32] = []
    var formats: [Int32] = []

    init(_ values: [PostgresValue]) {
        offsets.reserveCapacity(values.count)
        lengths.reserveCapacity(values.count)
        formats.reserveCapacity(values.count)
        for value in values { append(value) }
    }

    private mutating func append(_ value: PostgresValue) {
        let start = bytes.count
        var format: Int32 = 0
        switch value {
        case .null:
            offsets.append(nil)
            lengths.append(0)
            formats.append(0)
            return
        case .integer(let number): bytes.appendDecimal(number)
        case .double(let number): appendDouble(number)
        case .boolean(let flag): bytes.append(flag ? UInt8(ascii: "t") : UInt8(ascii: "f"))
        case .text(let text): bytes.append(contentsOf: text.utf8)
        case .bytea(let data):
            bytes.append(contentsOf: data)
            format = 1
        case .integers(let numbers): appendArray(numbers) { $0.bytes.appendDecimal($1) }
        case .doubles(let numbers): appendArray(numbers) { $0.appendDouble($1) }
        case .booleans(let flags): appendArray(flags) { $0.bytes.append($1 ? UInt8(ascii: "t") : UInt8(ascii: "f")) }
        case .texts(let texts):
            appendArray(texts) { buffer, text in
                guard let text else {
                    buffer.bytes.append(contentsOf: "NULL".utf8)
                    return
                }
                buffer.bytes.append(UInt8(ascii: "\""))
                buffer.appendEscaped(text)
                buffer.bytes.append(UInt8(ascii: "\""))
            }
        }
        offsets.append(start)
        lengths.append(Int32(bytes.count - start))
        formats.append(format)
        // Text values are NUL-terminated; a binary one gets a byte too, so that even an empty one
        // has an address (libpq reads a null pointer as SQL NULL).
        bytes.append(0)
    }

    /// `text`'s bytes with a backslash before each `"` and `\`, as a quoted array element needs;
    /// the runs between them are copied whole.
    private mutating func appendEscaped(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            var start = 0
            for index in utf8.indices where utf8[index] == UInt8(ascii: "\"") || utf8[index] == UInt8(ascii: "\\") {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<index]))
                bytes.append(UInt8(ascii: "\\"))
                start = index
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
    }

    /// Swift's shortest round-tripping form, which PostgreSQL parses back to the same double;
    /// the special values in PostgreSQL's spelling.
    private mutating func appendDouble(_ number: Double) {
        let text: String
        if number.isNaN {
            text = "NaN"
        } else if number.isInfinite {
            text = number < 0 ? "-Infinity" : "Infinity"
        } else {
            text = "\(number)"
        }
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func appendArray<T>(_ items: [T], _ each: (inout ParameterBuffer, T) -> Void) {
        bytes.append(UInt8(ascii: "{"))
        for (index, item) in items.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            each(&self, item)
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// Calls `body` with a pointer per parameter (nil for NULL) into this buffer.
    func withPointers<T>(_ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        bytes.withUnsafeBufferPointer { buffer in
            let base = UnsafeRawPointer(buffer.baseAddress)
            let pointers = offsets.map { offset in
                offset.flatMap { offset in base.map { ($0 + offset).assumingMemoryBound(to: CChar.self) } }
            }
            return body(pointers)
        }
    }
}
