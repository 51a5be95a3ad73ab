import Foundation

/// Reads the pages of a shard's first pass on a thread of its own, each right after the one before
/// it, so that the store is not idle between two reads while the runner records and sends: up to
/// `depth` pages wait read and prepared (two at least: a slow commit of the runner does not stall
/// the reads, nor a slow read the runner; as many as the window has batches, so that the turns
/// that follow one another when a shard starts, or when many batches come back at once, never
/// wait for a read). The reader stops after a short page (the last) or a failed read,
/// and restarts from wherever the runner says (a breaker's probe sent only part of a page).
final class PageReader: @unchecked Sendable {
    // `@unchecked Sendable` invariant: every `var` below is read and written only with `condition`
    // locked; `limit` and `read` never change.
    private let condition = NSCondition()
    private let limit: Int
    private let read: @Sendable (_ after: Int64) -> Result<PreparedPage, any Error>
    /// Where the next read starts; nil once the last page (or a failure) was read.
    private var cursor: Int64?
    /// Pages read and not yet taken, oldest first.
    private var ready: [Result<PreparedPage, any Error>] = []
    /// Bumped by `restart` and `stop`: a read that started before is dropped.
    private var generation = 0
    private var reading = false
    private var stopped = false
    private let depth: Int

    /// Starts reading pages of `limit` devices after `after` with `read`, up to `depth` ahead.
    init(after: Int64, limit: Int, depth: Int = 2, read: @escaping @Sendable (_ after: Int64) -> Result<PreparedPage, any Error>) {
        self.limit = limit
        self.depth = max(2, depth)
        self.read = read
        cursor = after
        let thread = Thread(named: "page-reader") { [self] in loop() }
        thread.start()
    }

    /// The next page, waiting for it; an empty one after the last.
    func next() throws -> PreparedPage {
        condition.lock()
        defer { condition.unlock() }
        while ready.isEmpty && (reading || cursor != nil) && !stopped { condition.wait() }
        guard !ready.isEmpty else { return PreparedPage.empty }
        let page = ready.removeFirst()
        condition.broadcast()
        return try page.get()
    }

    /// The next page if it is read already (an empty one after the last), else nil at once.
    func nextIfReady() throws -> PreparedPage? {
        condition.lock()
        defer { condition.unlock() }
        guard !ready.isEmpty else { return (reading || cursor != nil) && !stopped ? nil : PreparedPage.empty }
        let page = ready.removeFirst()
        condition.broadcast()
        return try page.get()
    }

    /// Drops what was read ahead and reads on after `after`.
    func restart(after: Int64) {
        condition.lock()
        generation += 1
        ready.removeAll()
        cursor = after
        condition.broadcast()
        condition.unlock()
    }

    /// Ends the thread, waiting for a read in progress, so that nothing reads the shard afterwards.
    func stop() {
        condition.lock()
        stopped = true
        generation += 1
        condition.broadcast()
        while reading { condition.wait() }
        condition.unlock()
    }

    private func loop() {
        condition.lock()
        defer { condition.unlock() }
        while true {
            while !stopped && (cursor == nil || ready.count >= depth) { condition.wait() }
            guard !stopped, let after = cursor else { return }
            let started = generation
            reading = true
            condition.unlock()
            let page = read(after)
            condition.lock()
            reading = false
            condition.broadcast()
            guard generation == started else { continue }
            ready.append(page)
            switch page {
            case .success(let prepared) where prepared.page.count == limit:
                cursor = prepared.page[prepared.page.count - 1].deviceID
            default:
                cursor = nil
            }
        }
    }
}
