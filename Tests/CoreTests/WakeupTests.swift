import Core
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A wakeup's eventfd as the waiting thread sees it: readable or not, and how many signals it holds.
struct WakeupTests {
    /// Whether `wakeup`'s descriptor would end a wait now.
    private func readable(_ wakeup: Wakeup) -> Bool {
        var entry = pollfd(fd: wakeup.fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 1
    }

    /// The signals `wakeup` holds, taken back.
    private func taken(_ wakeup: Wakeup) -> UInt64 {
        var count: UInt64 = 0
        return read(wakeup.fd, &count, 8) == 8 ? count : 0
    }

    @Test func aSignalWakesAtOnce() {
        let wakeup = Wakeup()
        #expect(!readable(wakeup))
        wakeup.signal()
        wakeup.signal()
        #expect(readable(wakeup))
        #expect(taken(wakeup) == 2)
        #expect(!readable(wakeup))
    }

    @Test func signalsDeferredComeOncePerWakeupWhenTheScopeEnds() {
        let first = Wakeup(), second = Wakeup()
        Wakeup.deferringSignals {
            for _ in 0..<5 { first.signal() }
            second.signal()
            first.signal()
            #expect(!readable(first))
            #expect(!readable(second))
        }
        #expect(taken(first) == 1)
        #expect(taken(second) == 1)
        // Outside the scope, signals go out at once again.
        first.signal()
        #expect(taken(first) == 1)
    }

    @Test func anotherThreadsSignalsAreNotDeferred() {
        let wakeup = Wakeup()
        Wakeup.deferringSignals {
            let thread = Thread { wakeup.signal() }
            thread.start()
            // The other thread's signal is there while this thread's scope is still open.
            var waited = 0
            while !readable(wakeup) && waited < 2_000 {
                usleep(1_000)
                waited += 1
            }
            #expect(readable(wakeup))
        }
        #expect(taken(wakeup) == 1)
    }
}
