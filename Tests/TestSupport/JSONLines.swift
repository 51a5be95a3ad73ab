import Core
import Foundation

/// Every complete (newline-terminated) line of a JSON-lines file, parsed; none when the file is
/// missing. A line still being written is left out; a line that is not JSON throws.
package func jsonLines(atPath path: String) throws -> [JSON] {
    guard let data = FileManager.default.contents(atPath: path) else { return [] }
    let bytes = [UInt8](data)
    var lines: [JSON] = []
    var start = 0
    for index in bytes.indices where bytes[index] == 0x0A {
        lines.append(try JSON.parse(bytes[start..<index]))
        start = index + 1
    }
    return lines
}
