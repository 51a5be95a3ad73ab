import Foundation
import Testing
import Core
@testable import Postgres
import TestSupport

/// A PostgreSQL restart (here a crash: `pg_ctl stop -m immediate`) is survived without reopening
/// the store: meanwhile every call fails at once with a retryable error (ingest answers 503), and
/// afterwards the pool reconnects by itself; nothing acknowledged before the crash is lost.
@Suite struct PostgresRestartTests {
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]

    func register(_ store: any DeviceStore, _ hwid: String) throws(StoreError) {
        try store.registerDevice(DeviceRegistration(app: "APP-1", hwid: hwid, pushToken: "tok-\(hwid)", gateway: nil,
                                                    attributes: DeviceAttributes(platform: 3), tags: try! TagUpdate.parse(["Level": 1])),
                                 now: 1)
    }

    @Test func aRestartIsRiddenOutWithRetryableErrorsAndNothingAcknowledgedIsLost() throws {
        let server = try PostgresServer()
        var settings = DatabaseSettings(path: "unused")
        settings.url = server.url
        settings.poolSize = 4
        let backend = try PostgresBackend(database: settings, apps: Self.apps)
        let store = backend.devices
        for index in 0..<20 { try register(store, "before-\(index)") }

        server.stop(immediately: true)
        for attempt in 0..<5 {
            let started = Date()
            let error = #expect(throws: StoreError.self) { try register(store, "during-\(attempt)") }
            guard case .backend(let failure)? = error else {
                Issue.record("expected a backend failure, got \(String(describing: error))")
                return
            }
            #expect(failure.isRetryable && failure.backend == "postgres", "\(failure)")
            #expect(Date().timeIntervalSince(started) < 3, "a call while the server is down must not hang")
            #expect(throws: StoreError.self) { try store.ping() }
        }

        try server.start()
        let deadline = Date().addingTimeInterval(15)
        var recovered = false
        while !recovered && Date() < deadline {
            recovered = (try? store.ping()) != nil
            if !recovered { usleep(100_000) }
        }
        #expect(recovered, "the store did not reconnect within 15 s")
        try register(store, "after")
        for index in 0..<20 {
            #expect(try store.getTags(app: "APP-1", hwid: "before-\(index)", userID: nil)["Level"] == .integer(1))
        }
        #expect(try store.device(app: "APP-1", hwid: "after") != nil)
        #expect(try store.device(app: "APP-1", hwid: "during-0") == nil)
    }
}
