import Foundation

/// A folder under the system temp directory, removed when the value is released.
package final class TemporaryDirectory {
    package let path: String

    package init() throws {
        path = NSTemporaryDirectory() + "herald-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    package func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
