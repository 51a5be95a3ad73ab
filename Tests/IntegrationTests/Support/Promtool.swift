import Foundation
import Testing

/// Prometheus's `promtool check metrics`, which `ops/install-deps --test` installs (Debian's
/// `prometheus` package): a `/metrics` text must pass it without a problem, lint warnings included.
enum Promtool {
    /// The promtool binary, if installed.
    static let path: String? = ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) }

    /// Records an issue unless promtool finds `text` clean; records that promtool is missing too,
    /// since ops/test installs it.
    static func expectClean(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        guard let path else {
            Issue.record("promtool is not installed (ops/install-deps --test installs Debian's prometheus)", sourceLocation: sourceLocation)
            return
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["check", "metrics"]
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data(text.utf8))
        try input.fileHandleForWriting.close()
        let said = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0 && said.isEmpty, "promtool check metrics: \(said)", sourceLocation: sourceLocation)
    }
}
