/// The live line on a terminal, redrawn every second in place: elapsed time, the last second's rate,
/// errors so far, and the last second's p50 and p99.
enum ProgressLine {
    static func render(elapsed: Double, duration: Double, last: SecondSample?, ok: Int, errors: Int) -> String {
        var parts = ["\(TextFormat.padLeft(TextFormat.fixed(min(elapsed, duration), 0), 4)) s / \(TextFormat.fixed(duration, 0)) s"]
        if let last {
            parts.append("\(TextFormat.padLeft(TextFormat.rate(last.rate), 7)) req/s")
            parts.append("p50 \(TextFormat.ms(last.p50)) ms")
            parts.append("p99 \(TextFormat.ms(last.p99)) ms")
        }
        parts.append("ok \(TextFormat.grouped(ok))")
        parts.append("errors \(TextFormat.grouped(errors))")
        return parts.joined(separator: "   ")
    }

    /// Carriage return and erase the line, before drawing it anew or leaving it.
    static let clear = "\r\u{1B}[2K"
}
