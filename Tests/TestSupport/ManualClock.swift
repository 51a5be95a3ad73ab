import Core
import Synchronization

/// A clock the test moves by hand.
package final class ManualClock: Clock {
    package let seconds: Atomic<Int64>
    package init(_ start: Int64) { seconds = Atomic(start) }
    package func now() -> Int64 { seconds.load(ordering: .relaxed) }
    package func advance(_ delta: Int64) { seconds.add(delta, ordering: .relaxed) }
}
