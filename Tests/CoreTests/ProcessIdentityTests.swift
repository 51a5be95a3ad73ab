import Testing
@testable import Core

@Suite struct ProcessIdentityTests {
    @Test func theIdIsTheHostThePidAndFourHexDigits() {
        let identity = ProcessIdentity(hostName: "vm-3198.example", pid: 4242, tag: 0x0a3f)
        #expect(identity.host == "vm-3198.example")
        #expect(identity.id == "vm-3198.example-4242-0a3f")
        #expect(ProcessIdentity(hostName: "vm", pid: 1, tag: 0).id == "vm-1-0000")
        #expect(ProcessIdentity(hostName: "vm", pid: 1, tag: .max).id == "vm-1-ffff")
    }

    /// Two containers with the same host name and pid differ by their tags, so they never share an id
    /// (two workers one DEALER identity and shard leases, two ingests one name in the dispatcher role).
    @Test func theSameHostAndPidWithAnotherTagIsAnotherProcess() {
        let first = ProcessIdentity(hostName: "web", pid: 1, tag: 0x1234)
        let second = ProcessIdentity(hostName: "web", pid: 1, tag: 0x1235)
        #expect(first.host == second.host && first.id != second.id)
        let drawn = ProcessIdentity.draw(hostName: "web", pid: 1)
        #expect(drawn.host == "web")
        #expect(drawn.id.wholeMatch(of: #/web-1-[0-9a-f]{4}/#) != nil, "\(drawn.id)")
    }

    /// Whatever the machine is called, ingest accepts the id and the host it names.
    @Test func aHostNameAWorkerIDCannotCarryIsMadeSafe() {
        let odd = ProcessIdentity(hostName: "café host/1", pid: 7, tag: 1)
        #expect(odd.host == "caf__host_1" && odd.id == "caf__host_1-7-0001")
        let long = ProcessIdentity(hostName: String(repeating: "h", count: 300), pid: Int32.max, tag: .max)
        #expect(long.host.count == 100)
        #expect(ProcessIdentity(hostName: "", pid: 7, tag: 1).host == "unknown")
        for identity in [odd, long, ProcessIdentity(hostName: "", pid: 7, tag: 1)] {
            #expect(QueueMessage.isWorkerID(identity.id) && QueueMessage.isWorkerID(identity.host), "\(identity)")
            let heartbeat = QueueMessage.heartbeat(worker: identity.id, name: identity.host, host: identity.host, pid: 7, capacity: 2, jobsInFlight: 0,
                                                   stats: WorkerStatistics())
            #expect(QueueMessage.decode(heartbeat.encoded) == heartbeat)
        }
    }

    /// A worker's default name is its host, plus the instance of the systemd template unit it runs
    /// in (`herald-worker@2.service`), so that it stays the same across restarts.
    @Test func aWorkerIsNamedAfterItsHostAndUnitInstance() {
        let templated = "0::/system.slice/system-herald\\x2dworker.slice/herald-worker@2.service\n"
        #expect(ProcessIdentity.defaultName(host: "vm-7", cgroup: templated) == "vm-7-2")
        #expect(ProcessIdentity.defaultName(host: "vm-7", cgroup: "0::/system.slice/herald-worker.service\n") == "vm-7")
        #expect(ProcessIdentity.defaultName(host: "vm-7", cgroup: "0::/user.slice/user-1000.slice/session-3.scope\n") == "vm-7")
        #expect(ProcessIdentity.defaultName(host: "vm-7", cgroup: nil) == "vm-7")
        let odd = ProcessIdentity.defaultName(host: "vm-7", cgroup: "0::/system.slice/herald-worker@a b/c.service\n")
        #expect(QueueMessage.isWorkerID(odd), "\(odd)")
        // A long host and a long instance still make a name a heartbeat may carry.
        let long = ProcessIdentity.defaultName(host: String(repeating: "h", count: 100),
                                               cgroup: "0::/system.slice/herald-worker@\(String(repeating: "i", count: 150)).service\n")
        #expect(QueueMessage.isWorkerID(long) && long.hasPrefix(String(repeating: "h", count: 100) + "-i"), "\(long)")
    }
}
