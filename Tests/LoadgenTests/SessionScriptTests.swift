@testable import Loadgen
import Testing

/// Devices and their sessions are a function of the seed, and sessions look like app use.
struct SessionScriptTests {
    @Test func theSameSeedGivesTheSameDevicesAndSessions() {
        for index in [0, 1, 999, 123_456] {
            let a = FleetDevice(seed: 5, index: index, oneSignalFraction: 0.2)
            let b = FleetDevice(seed: 5, index: index, oneSignalFraction: 0.2)
            #expect(a.hash == b.hash && a.isIOS == b.isIOS && a.usesOneSignal == b.usesOneSignal && a.timezone == b.timezone)
            for session in 1...4 { #expect(SessionScript.steps(of: a, session: session) == SessionScript.steps(of: b, session: session)) }
        }
        #expect(FleetDevice(seed: 5, index: 1, oneSignalFraction: 0).hash != FleetDevice(seed: 6, index: 1, oneSignalFraction: 0).hash)
    }

    @Test func sessionsStartWithRegistrationThenAppOpens() {
        for index in 0..<300 {
            let device = FleetDevice(seed: 9, index: index, oneSignalFraction: 0)
            let first = SessionScript.steps(of: device, session: 1)
            #expect(first[0] == .register)
            if case .setTags(initial: true, _) = first[1] {} else { Issue.record("session 1 sets every tag after registering") }
            for session in 2...5 {
                let steps = SessionScript.steps(of: device, session: session)
                #expect(steps[0] == .applicationOpen)
                #expect(steps.count <= 255)
                #expect(steps.contains { if case .screen = $0 { return true } else { return false } })
                #expect(!steps.dropFirst().contains(.register) && !steps.dropFirst().contains(.applicationOpen))
                if device.isIOS { #expect(steps[1] == .getTags) }
            }
        }
    }

    @Test func theMixLooksLikeAFleet() {
        var platforms = [0, 0], oneSignal = 0
        var methods: [FleetMethod: Int] = [:]
        var events: Set<String> = []
        for index in 0..<2000 {
            let device = FleetDevice(seed: 1, index: index, oneSignalFraction: 0.1)
            platforms[device.isIOS ? 0 : 1] += 1
            if device.usesOneSignal {
                oneSignal += 1
                #expect(device.isIOS)
            }
            for session in 1...3 {
                for step in SessionScript.steps(of: device, session: session) {
                    methods[step.method(oneSignal: device.usesOneSignal), default: 0] += 1
                    if let name = step.eventName { events.insert(name) }
                }
            }
        }
        #expect((150...250).contains(oneSignal))
        #expect((800...1100).contains(platforms[0]))
        #expect(Set(methods.keys) == Set(FleetMethod.allCases))
        #expect(methods[.postEvent]! > methods[.applicationOpen]!)
        #expect(events == Set(FleetStats.eventNames))
    }
}
