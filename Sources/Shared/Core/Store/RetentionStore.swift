/// Retention of the campaign pipeline's rows: each call deletes one bounded batch, so that the
/// writes of requests never wait long behind it, and returns how many rows went.
public protocol RetentionStore: Sendable {
    /// Deletes up to `limit` delivery rows (and leftover retries) of messages that finished (done or
    /// deleted) before `before`; returns how many rows went. Funnel totals are kept elsewhere.
    func pruneDeliveries(finishedBefore before: Int64, limit: Int, now: Int64) throws(StoreError) -> Int

    /// Deletes up to `limit` transaction ids whose window (`NewMessage.transactionWindow`)
    /// has passed at `now` (a reuse would create a new message anyway); returns how many went.
    func pruneMessageTransactions(expiredAt now: Int64, limit: Int) throws(StoreError) -> Int

    /// Deletes up to `limit` status rows of messages whose every copy has expired at `now` (none of
    /// them is listed any more), and lets retention delete those messages' delivery rows; returns
    /// how many status rows went.
    func pruneInbox(expiredAt now: Int64, limit: Int) throws(StoreError) -> Int
}
