import Queue
import Testing

/// The link state machine on its own: time and events go in, what to log and do comes out.
@Suite struct LinkWatchTests {
    @Test func aLinkThatNeverConnectsIsReportedAfterItsPatienceAndRetriedEveryPatience() {
        var watch = LinkWatch(now: 100, patience: 5, warningInterval: 60)
        #expect(watch.check(now: 104.9).isEmpty)
        #expect(watch.observe(.lost, now: 104.9) == nil)
        #expect(watch.check(now: 105) == [.unreachable(downSeconds: 5, refused: false), .reconnect])
        #expect(watch.check(now: 109).isEmpty)
        // Connected again every 5 s, warned once a minute.
        #expect(watch.check(now: 110) == [.reconnect])
        #expect(watch.check(now: 165) == [.unreachable(downSeconds: 65, refused: false), .reconnect])
        #expect(!watch.isUp)
    }

    @Test func aRefusedHandshakeIsNamedInTheWarning() {
        var watch = LinkWatch(now: 0, patience: 5, warningInterval: 60)
        #expect(watch.observe(.refused, now: 0.1) == nil)
        #expect(watch.check(now: 5) == [.unreachable(downSeconds: 5, refused: true), .reconnect])
    }

    @Test func aHandshakeReportsTheLinkUpOnceAndALostLinkIsWarnedAboutAfterItsPatience() {
        var watch = LinkWatch(now: 0, patience: 5, warningInterval: 60)
        #expect(watch.observe(.connected, now: 0.2) == .connected)
        #expect(watch.observe(.connected, now: 0.3) == nil)
        #expect(watch.isUp && watch.check(now: 60).isEmpty)
        #expect(watch.observe(.lost, now: 61) == nil)
        #expect(!watch.isUp && watch.check(now: 65.5).isEmpty)
        #expect(watch.check(now: 66) == [.unreachable(downSeconds: 5, refused: false), .reconnect])
        // Back up: reported, and a later outage is warned about again at once.
        #expect(watch.observe(.connected, now: 67) == .connected)
        #expect(watch.observe(.lost, now: 70) == nil)
        #expect(watch.check(now: 75) == [.unreachable(downSeconds: 5, refused: false), .reconnect])
    }
}
