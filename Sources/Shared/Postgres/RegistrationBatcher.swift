import Foundation
import Synchronization
import Core

/// Group commit for the Device API's busiest writes, registerDevice and setTags, and the thread
/// that runs the Device API's requests (`PostgresBackend.submitRequest`).
///
/// Device writes whose tag updates are known without reading the database (set operations on
/// tags whose type is known, no list, no `badge`; a registration without a user, a setTags without
/// device attributes) are written many per statement, in autocommit: the devices (updated when
/// they changed, inserted when new, without drawing sequence values for the existing ones) and
/// their tags, each table in one multi-row write. A busy server thus pays one round trip and one
/// commit for many writes.
///
/// Each of its `lanes` threads, when free, takes everything waiting at that moment: writes that
/// callers on other threads hand over and wait for, and whole requests, whose work it runs itself,
/// as SQLite's writer does: a write the work makes joins the batch instead of waiting, and the
/// request is answered once the batch has committed, without a thread of its own blocking for it.
/// Work that reaches the database in any other way is refused at its first statement (nothing has
/// happened yet) and runs again on a request thread of `PostgresDatabase`, which may block.
///
/// With two lanes, each writing on a pooled connection of its own, the next batch is gathered,
/// sent and executed while the previous one commits. (With one batch in flight, every client
/// waited in one convoy: the batch took all of them, and on a busy machine the wake-ups of its
/// round trip set the rate.) One lane gathers at a time, and a device is in at most one batch in
/// flight: a write whose device is being written waits for that batch, so that a device's writes
/// commit in the order they came. Each batch writes its devices in (application, hwid) order, so that it
/// never waits in a circle with another writer. When a batch fails for a reason other than the
/// server being away, each of its writes is made on its own, so that one bad row fails alone (a
/// request whose write failed so runs again on a request thread, which gets that failure as it
/// would have alone).
final class RegistrationBatcher: Sendable {
    /// One device write with its tags already converted.
    struct Item: Sendable {
        enum Write: Sendable {
            case registration(DeviceRegistration)
            /// setTags without device attributes, on a device that must exist.
            case tags(hwid: String, updates: [TagUpdate])
        }

        let appID: Int64
        let write: Write
        let tags: [(name: String, value: TagValue)]
        let now: Int64

        var hwid: String {
            switch write {
            case .registration(let registration): registration.hwid
            case .tags(let hwid, _): hwid
            }
        }

        var registration: DeviceRegistration? {
            if case .registration(let registration) = write { registration } else { nil }
        }
    }

    /// A whole request (see `PostgresBackend.submitRequest`): its work, which keeps its own
    /// result, and the three ways it ends.
    struct Request: Sendable {
        let run: @Sendable () -> Void
        /// Everything it wrote is committed: answer with the result `run` stored.
        let committed: @Sendable () -> Void
        /// Its write could not be committed and the server is away: answer 503.
        let failed: @Sendable () -> Void
        /// Run it again where it may block.
        let elsewhere: @Sendable () -> Void
    }

    /// A waiting caller. `@unchecked Sendable` invariant: `error` is written by a lane thread
    /// before `done` is signalled and read by the caller after.
    private final class Pending: @unchecked Sendable {
        let item: Item
        var error: StoreError?
        let done = DispatchSemaphore(value: 0)
        init(_ item: Item) { self.item = item }
    }

    /// A request whose writes are in batches, answered when the last of them is done (lanes may
    /// finish them at the same time).
    private final class Held: Sendable {
        private struct Progress {
            var remaining: Int
            var error: StoreError?
        }

        let request: Request
        private let progress: Mutex<Progress>

        init(_ request: Request, writes: Int) {
            self.request = request
            progress = Mutex(Progress(remaining: writes))
        }

        /// Notes how one of its writes went; answers the request after the last.
        func finished(_ error: StoreError?) {
            let (done, first) = progress.withLock { progress in
                progress.remaining -= 1
                if progress.error == nil { progress.error = error }
                return (progress.remaining == 0, progress.error)
            }
            guard done else { return }
            switch first {
            case nil: request.committed()
            case .backend(let failure)? where failure.isRetryable: request.failed()
            default: request.elsewhere()
            }
        }
    }

    private enum Waiting {
        case call(Pending)
        case request(Request)
    }

    private struct Device: Hashable, Comparable {
        let appID: Int64
        let hwid: String
        static func < (a: Device, b: Device) -> Bool { (a.appID, a.hwid) < (b.appID, b.hwid) }
    }

    /// A write of a batch and whom to tell how it went.
    private struct Entry: Sendable {
        let item: Item
        let owner: Owner
        var device: Device { Device(appID: item.appID, hwid: item.hwid) }
        enum Owner: Sendable {
            case call(Pending)
            case request(Held)
        }
    }

    /// What the lanes share: the writes gathered but not yet written (their device was in another
    /// lane's batch, or twice in one), and the devices of the batches in flight.
    private struct Flight {
        var waiting: [Entry] = []
        var devices: Set<Device> = []
    }

    /// At most this many writes share one statement.
    static let maximumBatch = 256
    /// Batches in flight at most.
    static let lanes = 2

    private let database: PostgresDatabase
    /// Makes one write on its own (the store's ordinary path), for a batch that failed.
    private let single: @Sendable (Item) throws(StoreError) -> Void
    private let queue = Mutex<[Waiting]>([])
    /// Signalled for each arrival, and when a batch is done while writes wait.
    private let available = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    /// Held by the lane that gathers, from taking the queue until its batch's devices are in flight,
    /// so that writes of one device are gathered, and so written, in the order they came.
    private let gathering = Mutex<Flight>(Flight())

    init(database: PostgresDatabase, single: @escaping @Sendable (Item) throws(StoreError) -> Void) {
        self.database = database
        self.single = single
        let started = DispatchSemaphore(value: 0)
        for lane in 0..<Self.lanes {
            let thread = Thread { [self] in
                database.collector.adoptCurrentThread(lane)
                started.signal()
                run()
            }
            thread.name = "herald-postgres-batch-\(lane)"
            thread.start()
        }
        for _ in 0..<Self.lanes { started.wait() }
    }

    /// Ends the lanes once nothing waits.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        for _ in 0..<Self.lanes { available.signal() }
    }

    /// Writes `item` with whatever else is waiting; returns once it is committed. On a lane, inside
    /// a request's work, the item joins the batch being gathered instead.
    func register(_ item: Item) throws(StoreError) {
        if database.collector.collect(item) { return }
        let pending = Pending(item)
        enqueue(.call(pending))
        pending.done.wait()
        if let error = pending.error { throw error }
    }

    /// Runs `request` on a lane with its next batch.
    func submit(_ request: Request) {
        enqueue(.request(request))
    }

    private func enqueue(_ waiting: Waiting) {
        queue.withLock { $0.append(waiting) }
        available.signal()
    }

    /// A lane: gathers a batch (running the requests' work, whose writes join the calls' ones),
    /// writes it, frees its devices and answers its owners.
    private func run() {
        var taken: [Waiting] = []
        while true {
            available.wait()
            var batch: [Entry] = []
            let stopped = gathering.withLock { flight -> Bool in
                queue.withLock { swap(&$0, &taken) }
                if taken.isEmpty && flight.waiting.isEmpty && stopping.load(ordering: .relaxed) { return true }
                for waiting in taken {
                    switch waiting {
                    case .call(let pending):
                        flight.waiting.append(Entry(item: pending.item, owner: .call(pending)))
                    case .request(let request):
                        let (items, refused) = database.collector.gather(request.run)
                        if refused {
                            request.elsewhere()
                        } else if items.isEmpty {
                            request.committed()
                        } else {
                            let held = Held(request, writes: items.count)
                            flight.waiting += items.map { Entry(item: $0, owner: .request(held)) }
                        }
                    }
                }
                taken.removeAll(keepingCapacity: true)
                // A device in another lane's batch, or twice in this one, waits for a later batch.
                var later: [Entry] = []
                var devices: Set<Device> = []
                for entry in flight.waiting {
                    let device = entry.device
                    if batch.count < Self.maximumBatch && !flight.devices.contains(device) && devices.insert(device).inserted {
                        batch.append(entry)
                    } else {
                        later.append(entry)
                    }
                }
                flight.waiting = later
                flight.devices.formUnion(devices)
                return false
            }
            if stopped {
                // Stopping: wake the next lane, which finds nothing either.
                available.signal()
                return
            }
            guard !batch.isEmpty else { continue }
            batch.sort { $0.device < $1.device }
            let errors = write(batch.map(\.item))
            let more = gathering.withLock { flight -> Bool in
                for entry in batch { flight.devices.remove(entry.device) }
                return !flight.waiting.isEmpty
            }
            if more { available.signal() }
            for (entry, error) in zip(batch, errors) {
                switch entry.owner {
                case .call(let pending):
                    pending.error = error
                    pending.done.signal()
                case .request(let held):
                    held.finished(error)
                }
            }
        }
    }

    /// Writes the batch; the error of each item (nil when committed).
    private func write(_ items: [Item]) -> [StoreError?] {
        do {
            let unknown = try database.autocommit { connection in try Self.statement(items, connection) }
            return items.indices.map { unknown.contains($0 + 1) ? .invalid(PostgresDeviceStore.unregistered) : nil }
        } catch {
            if case .backend(let failure) = error, failure.isRetryable {
                return Array(repeating: error, count: items.count)
            }
            return items.map { item -> StoreError? in
                do throws(StoreError) {
                    try single(item)
                    return nil
                } catch {
                    return error
                }
            }
        }
    }

    /// The whole batch in one statement (see `PostgresDeviceStore.registration` for one device);
    /// returns the positions (from 1) of the tag writes whose device does not exist, which wrote nothing.
    static func statement(_ items: [Item], _ connection: PostgresConnection) throws -> Set<Int> {
        let registrations = items.map(\.registration)
        let attributes = registrations.map { $0?.attributes ?? DeviceAttributes() }
        return Set(try connection.rows(sql, [
            .integers(items.map(\.appID)), .texts(items.map(\.hwid)),
            .texts(attributes.map { $0.platform.map { String($0) } }), .texts(attributes.map(\.language)),
            .texts(attributes.map { $0.timezoneOffset.map { String($0) } }), .texts(attributes.map(\.appVersion)),
            .texts(attributes.map(\.osVersion)), .texts(attributes.map(\.deviceModel)), .texts(attributes.map(\.sdkVersion)),
            .texts(attributes.map { $0.notificationTypes.map { String($0) } }), .integers(items.map(\.now)),
            .texts(registrations.map { $0?.pushToken }), .texts(registrations.map { $0?.gateway }),
            .booleans(registrations.map { $0 != nil }),
        ] + TagValue.columns(items.map(\.tags))) { Int($0.int(0)) })
    }

    static let sql = """
        WITH input AS (
          SELECT * FROM unnest($1::bigint[], $2::text[], $3::integer[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[],
            $9::text[], $10::bigint[], $11::bigint[], $12::text[], $13::text[], $14::boolean[])
            WITH ORDINALITY AS u(app_id, hwid, platform, language, timezone_offset, app_version, os_version, device_model,
              sdk_version, notification_types, now, push_token, gateway, registers, n)),
        existing AS (SELECT i.n, d.id FROM input i JOIN devices d ON d.app_id = i.app_id AND d.hwid = i.hwid),
        updated AS (
          UPDATE devices d SET platform = i.platform, language = COALESCE(i.language, d.language),
            timezone_offset = COALESCE(i.timezone_offset, d.timezone_offset), app_version = COALESCE(i.app_version, d.app_version),
            os_version = COALESCE(i.os_version, d.os_version), device_model = COALESCE(i.device_model, d.device_model),
            sdk_version = COALESCE(i.sdk_version, d.sdk_version),
            notification_types = COALESCE(i.notification_types, d.notification_types), updated_at = i.now,
            push_token = i.push_token, gateway = COALESCE(i.gateway, d.gateway), subscribed = true, token_invalid_reason = NULL
          FROM input i JOIN existing e ON e.n = i.n
          WHERE d.id = e.id AND i.registers AND (i.platform IS DISTINCT FROM d.platform OR COALESCE(i.language, d.language) IS DISTINCT FROM d.language
            OR COALESCE(i.timezone_offset, d.timezone_offset) IS DISTINCT FROM d.timezone_offset
            OR COALESCE(i.app_version, d.app_version) IS DISTINCT FROM d.app_version
            OR COALESCE(i.os_version, d.os_version) IS DISTINCT FROM d.os_version
            OR COALESCE(i.device_model, d.device_model) IS DISTINCT FROM d.device_model
            OR COALESCE(i.sdk_version, d.sdk_version) IS DISTINCT FROM d.sdk_version
            OR COALESCE(i.notification_types, d.notification_types) IS DISTINCT FROM d.notification_types
            OR i.push_token IS DISTINCT FROM d.push_token OR COALESCE(i.gateway, d.gateway) IS DISTINCT FROM d.gateway
            OR NOT d.subscribed OR d.token_invalid_reason IS NOT NULL)
          RETURNING d.id),
        inserted AS (
          INSERT INTO devices (app_id, hwid, platform, language, timezone_offset, app_version, os_version, device_model,
            sdk_version, notification_types, created_at, updated_at, push_token, gateway)
          SELECT i.app_id, i.hwid, i.platform, i.language, i.timezone_offset, i.app_version, i.os_version, i.device_model,
            i.sdk_version, i.notification_types, i.now, i.now, i.push_token, i.gateway
          FROM input i WHERE i.registers AND NOT EXISTS (SELECT 1 FROM existing e WHERE e.n = i.n) ORDER BY i.n
          ON CONFLICT (app_id, hwid) DO UPDATE SET platform = excluded.platform,
            language = COALESCE(excluded.language, devices.language),
            timezone_offset = COALESCE(excluded.timezone_offset, devices.timezone_offset),
            app_version = COALESCE(excluded.app_version, devices.app_version),
            os_version = COALESCE(excluded.os_version, devices.os_version),
            device_model = COALESCE(excluded.device_model, devices.device_model),
            sdk_version = COALESCE(excluded.sdk_version, devices.sdk_version),
            notification_types = COALESCE(excluded.notification_types, devices.notification_types),
            updated_at = excluded.updated_at, push_token = excluded.push_token, gateway = COALESCE(excluded.gateway, devices.gateway),
            subscribed = true, token_invalid_reason = NULL
          RETURNING id, app_id, hwid),
        ids AS (
          SELECT n, id FROM existing
          UNION ALL
          SELECT i.n, x.id FROM inserted x JOIN input i ON i.app_id = x.app_id AND i.hwid = x.hwid AND i.registers),
        tagged AS (
          INSERT INTO device_tags (device_id, name, app_id, type, num, str)
          SELECT ids.id, t.name, i.app_id, t.type, t.num, t.str
          FROM unnest($15::bigint[], $16::text[], $17::integer[], $18::numeric[], $19::text[]) AS t(n, name, type, num, str)
          JOIN ids ON ids.n = t.n JOIN input i ON i.n = t.n
          ON CONFLICT (device_id, name) DO UPDATE SET type = excluded.type, num = excluded.num, str = excluded.str
          WHERE device_tags.type IS DISTINCT FROM excluded.type OR device_tags.num IS DISTINCT FROM excluded.num
            OR device_tags.str IS DISTINCT FROM excluded.str)
        SELECT i.n FROM input i WHERE NOT i.registers AND NOT EXISTS (SELECT 1 FROM existing e WHERE e.n = i.n)
        """
}
