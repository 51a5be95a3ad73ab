/// The WAL index (the database's `-shm` file) as SQLite maps it for this process, read to tell
/// without a lock whether any connection of any process has committed since a moment.
///
/// Every commit rewrites the index header (its change counter, last frame, salts and checksum), and a
/// WAL restart draws new salts, so two equal readings of the header mean no commit came between
/// them. A reading can be torn by a concurrent commit; a torn reading never equals a later whole
/// one, so it only costs a fresh transaction. The layout is SQLite's file format (the first header
/// copy at offset 0, 48 bytes; the checkpoint's backfilled frame count at offset 96).
///
/// `@unchecked Sendable` invariant: the region is only read, and SQLite keeps it mapped while the
/// connection it was asked through is open; the owner keeps that connection open as long as this.
final class WALIndex: @unchecked Sendable {
    /// The index header and whether the WAL was wholly copied into the database file at that moment.
    struct Reading: Equatable {
        var header: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
        var backfilled: Bool

        static func == (lhs: Reading, rhs: Reading) -> Bool {
            lhs.header == rhs.header && lhs.backfilled == rhs.backfilled
        }
    }

    private let base: UnsafeRawPointer

    /// The WAL index `connection` uses; nil when the database is not in WAL mode.
    init?(connection: SQLiteConnection) {
        guard let region = connection.walIndexRegion else { return nil }
        base = region
    }

    /// The header now, and whether the checkpoint had copied every frame (`nBackfill == mxFrame`).
    func read() -> Reading {
        let words = base.assumingMemoryBound(to: UInt64.self)
        let lastFrame = base.load(fromByteOffset: 16, as: UInt32.self)
        let backfilledFrames = base.load(fromByteOffset: 96, as: UInt32.self)
        return Reading(header: (words[0], words[1], words[2], words[3], words[4], words[5]), backfilled: backfilledFrames == lastFrame)
    }
}
