/// How a statistics window `[from, to)` is read: its whole UTC days from the per-day rollups,
/// the rest (the partial days at its edges) from the raw reports. A window within one day has no
/// whole day: `fullStart` and `fullEnd` are then both `to`.
package struct StatisticsWindow: Sendable, Equatable {
    package static let day: Int64 = 86_400

    package let fullStart: Int64
    package let fullEnd: Int64

    package init(from: Int64, to: Int64) {
        let firstDay = Self.floorDiv(from + Self.day - 1, Self.day)
        let endDay = Self.floorDiv(to, Self.day)
        if firstDay < endDay {
            (fullStart, fullEnd) = (firstDay * Self.day, endDay * Self.day)
        } else {
            (fullStart, fullEnd) = (to, to)
        }
    }

    /// The first and the end (exclusive) day number of the whole days.
    package var days: (first: Int64, end: Int64) { (fullStart / Self.day, fullEnd / Self.day) }

    /// `a / b` rounded towards minus infinity.
    package static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
}
