/// What a device does in its n-th session, derived from its hash: nothing is stored but the
/// position. Session 1 starts with the registration; an SDK session then opens the app, reads the
/// tags, visits screens (with a tag change, custom events, sometimes a purchase between them) and
/// ends idle or in the background. A OneSignal helper device registers, sets its tags, and later
/// sessions are one editdevice each.
enum SessionScript {
    /// The step at `position` (0-based) of `session` (1-based), and the number of steps of that session.
    static func step(of device: FleetDevice, session: Int, position: Int, scenario: Scenario = .builtIn) -> (step: FleetStep, length: Int) {
        var recorder = Recorder(target: position)
        write(device, session: session, scenario: scenario, into: &recorder)
        return (recorder.found ?? .applicationOpen, recorder.count)
    }

    /// Every step of a session, in order (tests and docs).
    static func steps(of device: FleetDevice, session: Int, scenario: Scenario = .builtIn) -> [FleetStep] {
        let length = step(of: device, session: session, position: 0, scenario: scenario).length
        return (0..<length).map { step(of: device, session: session, position: $0, scenario: scenario).step }
    }

    private struct Recorder {
        let target: Int
        var count = 0
        var found: FleetStep?

        @inline(__always)
        mutating func emit(_ step: FleetStep) {
            if count == target { found = step }
            count += 1
        }
    }

    private static func write(_ device: FleetDevice, session: Int, scenario: Scenario, into out: inout Recorder) {
        var state = Mix.hash(device.hash, 1_000 &+ UInt64(session))
        func draw() -> UInt64 {
            state = Mix.next(state)
            return state
        }
        if device.usesOneSignal {
            if session == 1 {
                out.emit(.register)
                out.emit(.editTags(initial: true, variant: draw()))
            } else {
                let roll = draw() % 100
                if roll < Scenario.percent(scenario.oneSignalEditTags) {
                    out.emit(.editTags(initial: false, variant: draw()))
                } else {
                    out.emit(.subscription(subscribed: roll < 100 - Scenario.percent(scenario.oneSignalUnsubscribe)))
                }
            }
            return
        }
        if session == 1 {
            out.emit(.register)
            out.emit(.setTags(initial: true, variant: draw()))
            if device.isIOS { out.emit(.getTags) }
        } else {
            out.emit(.applicationOpen)
            // The iOS SDK reads the tags right after applicationOpen; Android apps and sites sometimes do.
            if device.isIOS || draw() % 100 < Scenario.percent(scenario.getTagsAfterOpen) { out.emit(.getTags) }
        }
        let screenCount = device.screens.count
        let screens = 1 + Int(draw() % UInt64(scenario.screensPerSession))
        let tagsAfter = session > 1 && draw() % 100 < Scenario.percent(scenario.tagChurn) ? Int(draw() % UInt64(screens)) : -1
        let customRoll = draw() % 100
        let one = Scenario.percent(scenario.oneCustomEvent)
        var customs = customRoll < one ? 1 : (customRoll < one + Scenario.percent(scenario.twoCustomEvents) ? 2 : 0)
        var screen = Int(draw() % UInt64(screenCount))
        for visit in 0..<screens {
            out.emit(.screen(screen))
            if visit == tagsAfter { out.emit(.setTags(initial: false, variant: draw())) }
            while customs > 0 && (visit == screens - 1 || draw() % 2 == 0) {
                out.emit(.custom(Int(draw() % UInt64(DeviceCatalog.customEvents.count)), variant: draw()))
                customs -= 1
            }
            screen = (screen + 1 + Int(draw() % 3)) % screenCount
        }
        if draw() % 100 < Scenario.percent(scenario.purchase) { out.emit(.purchase(variant: draw())) }
        let sessionSeconds = 20 + Int(draw() % 600)
        let ending = draw() % 100
        let idle = Scenario.percent(scenario.idleEnding)
        if ending < idle {
            out.emit(.idle(screen: screen, session: sessionSeconds, idle: 30 + Int(draw() % 90)))
            if draw() % 2 == 0 { out.emit(.exit(screen: screen, session: sessionSeconds + 60, exitIntent: 30)) }
        } else if ending < idle + Scenario.percent(scenario.exitEnding) {
            out.emit(.exit(screen: screen, session: sessionSeconds, exitIntent: 30))
        }
    }
}
