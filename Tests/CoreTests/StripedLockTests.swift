import Foundation
import Testing
import Core

@Suite struct StripedLockTests {
    /// A thread finds its own stripe each time; what threads put in their stripes is all there when
    /// every stripe is read in turn.
    @Test func eachThreadKeepsToItsStripeAndAllHoldsEverything() {
        let striped = StripedLock<[Int]>(bits: 3, [])
        #expect(striped.all.count == 8)
        let threads = 16, each = 100
        let done = DispatchSemaphore(value: 0)
        for thread in 0..<threads {
            Thread {
                let mine = striped.current
                for value in 0..<each {
                    #expect(striped.current === mine)
                    mine.withLock { $0.append(thread * each + value) }
                }
                done.signal()
            }.start()
        }
        for _ in 0..<threads { done.wait() }
        let stored = striped.all.flatMap { stripe in stripe.withLock { $0 } }
        #expect(stored.sorted() == Array(0..<(threads * each)))
    }
}
