import Core

/// What ingest logs about workers whose CURVE key is refused, as a value that returns the lines to
/// write: at most one a minute however many peers knock, in memory that does not grow with them.
/// The first refusal after a quiet minute is logged at once with its key and address; those after
/// it are held (how many, from how many distinct keys, the last one) and summed up in one line when
/// the minute since the previous line is over, at the next refusal or `due(at:)`, whichever comes
/// first, or when ingest stops (`remaining(at:)`). The distinct keys are counted in a
/// `DeviceSketch`: exact up to 512, then estimated (within about 2%), in at most 4 KiB.
package struct RefusalLog: Sendable {
    /// A line to write.
    package enum Line: Equatable, Sendable {
        /// One refused key and the address it came from.
        case refused(key: String, address: String)
        /// `count` refusals held since the previous line, from `keys` distinct keys, and the last of them.
        case held(count: Int, keys: Int, lastKey: String, lastAddress: String)
    }

    package static let interval = 60.0
    private var lastLineAt = -Double.infinity
    /// Refusals since the previous line, not logged yet.
    package private(set) var heldCount = 0
    /// Their distinct keys.
    package private(set) var heldKeys = DeviceSketch()
    private var last: (key: String, address: String)?

    package init() {}

    /// Counts a refusal of `key` from `address` at `now` (monotonic seconds); returns the line to
    /// write, if one is due.
    package mutating func refused(key: String, address: String, at now: Double) -> Line? {
        if heldCount == 0 && now - lastLineAt >= Self.interval {
            lastLineAt = now
            return .refused(key: key, address: address)
        }
        heldCount += 1
        heldKeys.insert(key)
        last = (key, address)
        return due(at: now)
    }

    /// The line summing up the refusals held, once a minute has passed since the previous line.
    package mutating func due(at now: Double) -> Line? {
        guard now - lastLineAt >= Self.interval else { return nil }
        return remaining(at: now)
    }

    /// The line summing up the refusals held, whenever the minute ends: when ingest stops, so that
    /// no refusal goes unwritten.
    package mutating func remaining(at now: Double) -> Line? {
        guard let last else { return nil }
        let line = Line.held(count: heldCount, keys: heldKeys.count, lastKey: last.key, lastAddress: last.address)
        (heldCount, heldKeys, self.last, lastLineAt) = (0, DeviceSketch(), nil, now)
        return line
    }
}
