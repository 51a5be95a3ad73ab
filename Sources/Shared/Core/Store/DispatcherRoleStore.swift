/// The dispatcher role: which of the ingests serving one database hands out the work. A role is
/// held until a moment in time and renewed before it runs out; nobody holds it once it has.
public protocol DispatcherRoleStore: Sendable {
    /// Makes `ingest` the one dispatcher until `until` unless another ingest holds the role and its
    /// hold has not run out at `now`; true when `ingest` holds it. Several ingests on one database
    /// call this every second: one dispatches, the others stand by and take over when it stops renewing.
    func holdDispatcher(ingest: String, now: Int64, until: Int64) throws(StoreError) -> Bool

    /// Gives the role up at once (a graceful stop), so that a standby takes over without waiting.
    func releaseDispatcher(ingest: String) throws(StoreError)

    /// The ingest holding the dispatcher role at `now`, if any.
    func dispatcherHolder(now: Int64) throws(StoreError) -> String?
}
