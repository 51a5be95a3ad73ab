import Queue
import Testing

/// The link state machine on its own: time and events go in, what to log and do comes out.
@Suite struct LinkWatchTests {
    /// A peer that is away is warned about, and left to libzmq, which connects again by itself and
    /// keeps what the socket queued meanwhile: the socket is never opened anew for it.
    @Test func aLinkThatNeverConnectsIsReportedAfterItsPatienceAndLeftToLibzmq() {
        var watch = LinkWatch(now: 100, patience: 5, warningInterval: 60)
        #expect(watch.check(now: 104.9).isEmpty)
        #expect(watch.observe(.lost, now: 104.9) == nil)
        #expect(watch.check(now: 105) == [.unreachable(downSeconds: 5, refused: false)])
        #expect(watch.check(now: 109).isEmpty)
        // Warned once a minute, never reopened.
        #expect(watch.check(now: 110).isEmpty)
        #expect(watch.check(now: 165) == [.unreachable(downSeconds: 65, refused: false)])
        #expect(!watch.isUp)
    }

    /// libzmq gives up on a connection whose handshake the peer refused, so that one is opened
    /// anew every 5 s, as long as each new one is refused too.
    @Test func aRefusedHandshakeIsNamedInTheWarningAndTheSocketOpenedAnew() {
        var watch = LinkWatch(now: 0, patience: 5, warningInterval: 60)
        #expect(watch.observe(.refused, now: 0.1) == nil)
        #expect(watch.observe(.lost, now: 0.1) == nil)
        #expect(watch.check(now: 5) == [.unreachable(downSeconds: 5, refused: true), .reconnect])
        #expect(watch.observe(.refused, now: 5.1) == nil)
        #expect(watch.check(now: 10) == [.reconnect])
        // The new socket was not refused (the peer went away meanwhile): libzmq goes on trying.
        #expect(watch.check(now: 15).isEmpty)
        #expect(watch.check(now: 65) == [.unreachable(downSeconds: 65, refused: false)])
        #expect(watch.observe(.connected, now: 66) == .connected)
    }

    /// A link that goes down is reported at once (once), then warned about while it stays down.
    @Test func aHandshakeReportsTheLinkUpOnceAndALostLinkAtOnceThenAfterItsPatience() {
        var watch = LinkWatch(now: 0, patience: 5, warningInterval: 60)
        #expect(watch.observe(.connected, now: 0.2) == .connected)
        #expect(watch.observe(.connected, now: 0.3) == nil)
        #expect(watch.isUp && watch.check(now: 60).isEmpty)
        #expect(watch.observe(.lost, now: 61) == .disconnected)
        #expect(watch.observe(.lost, now: 61.1) == nil)
        #expect(!watch.isUp && watch.check(now: 65.5).isEmpty)
        #expect(watch.check(now: 66) == [.unreachable(downSeconds: 5, refused: false)])
        // Back up: reported, and a later outage is warned about again at once.
        #expect(watch.observe(.connected, now: 67) == .connected)
        #expect(watch.observe(.refused, now: 70) == .disconnected)
        #expect(watch.check(now: 75) == [.unreachable(downSeconds: 5, refused: true), .reconnect])
    }
}
