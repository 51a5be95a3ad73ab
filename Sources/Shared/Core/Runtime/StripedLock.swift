#if canImport(Glibc)
import Glibc
#endif

/// Values behind locks of their own, one per stripe. A thread uses the stripe its id picks, so
/// threads that keep to their own stripes seldom wait for one another's lock (nor pass its cache
/// line back and forth), while whoever needs all of them can take each in turn.
public final class StripedLock<Value>: Sendable {
    /// Every stripe, in a fixed order.
    public let all: [Lock<Value>]
    @usableFromInline let bits: Int

    /// `1 << bits` stripes, each starting as `initial`.
    public init(bits: Int, _ initial: Value) {
        self.bits = bits
        all = (0..<(1 << bits)).map { _ in Lock(initial) }
    }

    /// The calling thread's stripe: its id (the address of its control block) mixed, top bits kept.
    @inlinable
    public var current: Lock<Value> {
        all[Int(truncatingIfNeeded: (UInt64(pthread_self()) &* 0x9E37_79B9_7F4A_7C15) >> (64 - bits))]
    }
}
