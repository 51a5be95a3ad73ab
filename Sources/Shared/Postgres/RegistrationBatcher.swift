import Foundation
import Synchronization
import Core

/// Group commit for registerDevice, the Device API's busiest write, and the thread that runs
/// the Device API's requests (`PostgresBackend.submitRequest`).
///
/// Registrations whose tag updates are known without reading the database (set operations on
/// tags whose type is known, no list, no `badge`, no user) are written many per statement, in
/// autocommit: the devices (updated when they changed, inserted when new, without drawing
/// sequence values for the existing ones) and their tags, each table in one multi-row write. A
/// busy server thus pays one round trip and one commit for many registrations, and the next batch
/// gathers while the server works. (Two threads writing batches at once made smaller batches and,
/// measured, fewer registrations per second.)
///
/// Its one thread takes everything waiting at that moment: registrations that callers on other
/// threads hand over and wait for, and whole requests, whose work it runs itself, as SQLite's
/// writer does: a registration the work makes joins the batch instead of waiting, and the request
/// is answered once the batch has committed, without a thread of its own blocking for it. Work
/// that reaches the database in any other way is refused at its first statement (nothing has
/// happened yet) and runs again on a request thread of `PostgresDatabase`, which may block.
///
/// Each batch writes its devices in (application, hwid) order, so that it never waits in a circle
/// with another writer. A registration whose device appears twice in a batch waits for the next
/// one; when a batch fails for a reason other than the server being away, each of its
/// registrations is written on its own, so that one bad row fails alone (a request whose
/// registration failed so runs again on a request thread, which gets that failure as it would
/// have alone).
final class RegistrationBatcher: Sendable {
    /// One registration with its tags already converted.
    struct Item: Sendable {
        let appID: Int64
        let registration: DeviceRegistration
        let tags: [(name: String, value: TagValue)]
        let now: Int64
    }

    /// A whole request (see `PostgresBackend.submitRequest`): its work, which keeps its own
    /// result, and the three ways it ends.
    struct Request: Sendable {
        let run: @Sendable () -> Void
        /// Everything it wrote is committed: answer with the result `run` stored.
        let committed: @Sendable () -> Void
        /// Its registration could not be committed and the server is away: answer 503.
        let failed: @Sendable () -> Void
        /// Run it again where it may block.
        let elsewhere: @Sendable () -> Void
    }

    /// A waiting caller. `@unchecked Sendable` invariant: `error` is written by the batcher thread
    /// before `done` is signalled and read by the caller after.
    private final class Pending: @unchecked Sendable {
        let item: Item
        var error: StoreError?
        let done = DispatchSemaphore(value: 0)
        init(_ item: Item) { self.item = item }
    }

    private enum Waiting {
        case call(Pending)
        case request(Request)
    }

    /// A registration of this batch and whom to tell how it went.
    private struct Entry {
        let item: Item
        /// The waiting caller, or the index of the request in `held`.
        let owner: Owner
        enum Owner {
            case call(Pending)
            case request(Int)
        }
    }

    /// At most this many registrations share one statement.
    static let maximumBatch = 256

    private let database: PostgresDatabase
    /// Writes one registration on its own (the store's ordinary path), for a batch that failed.
    private let single: @Sendable (Item) throws(StoreError) -> Void
    private let queue = Mutex<[Waiting]>([])
    private let available = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)

    init(database: PostgresDatabase, single: @escaping @Sendable (Item) throws(StoreError) -> Void) {
        self.database = database
        self.single = single
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            database.collector.adoptCurrentThread()
            started.signal()
            run()
        }
        thread.name = "herald-postgres-registrations"
        thread.start()
        started.wait()
    }

    /// Ends the thread once the queue is empty.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        available.signal()
    }

    /// Writes `item` with whatever else is waiting; returns once it is committed. On the batcher
    /// thread, inside a request's work, the item joins the batch being gathered instead.
    func register(_ item: Item) throws(StoreError) {
        if database.collector.collect(item) { return }
        let pending = Pending(item)
        enqueue(.call(pending))
        pending.done.wait()
        if let error = pending.error { throw error }
    }

    /// Runs `request` on the batcher thread with the next batch.
    func submit(_ request: Request) {
        enqueue(.request(request))
    }

    private func enqueue(_ waiting: Waiting) {
        queue.withLock { $0.append(waiting) }
        available.signal()
    }

    private func run() {
        var taken: [Waiting] = []
        while true {
            available.wait()
            queue.withLock { swap(&$0, &taken) }
            if taken.isEmpty {
                if stopping.load(ordering: .relaxed) { return }
                continue
            }
            // Run the requests' work; their registrations join the calls' ones.
            var entries: [Entry] = []
            var held: [(request: Request, error: StoreError?)] = []
            for waiting in taken {
                switch waiting {
                case .call(let pending):
                    entries.append(Entry(item: pending.item, owner: .call(pending)))
                case .request(let request):
                    let (items, refused) = database.collector.gather(request.run)
                    if refused {
                        request.elsewhere()
                    } else if items.isEmpty {
                        request.committed()
                    } else {
                        entries += items.map { Entry(item: $0, owner: .request(held.count)) }
                        held.append((request, nil))
                    }
                }
            }
            taken.removeAll(keepingCapacity: true)
            while !entries.isEmpty {
                // A device twice in one statement cannot be upserted twice: the later one waits a round.
                var batch: [Entry] = [], later: [Entry] = []
                var devices: Set<String> = []
                for entry in entries {
                    let key = "\(entry.item.appID)/\(entry.item.registration.hwid)"
                    if batch.count < Self.maximumBatch && devices.insert(key).inserted { batch.append(entry) } else { later.append(entry) }
                }
                batch.sort { ($0.item.appID, $0.item.registration.hwid) < ($1.item.appID, $1.item.registration.hwid) }
                let errors = write(batch.map(\.item))
                for (entry, error) in zip(batch, errors) {
                    switch entry.owner {
                    case .call(let pending):
                        pending.error = error
                        pending.done.signal()
                    case .request(let index):
                        if let error, held[index].error == nil { held[index].error = error }
                    }
                }
                entries = later
            }
            for (request, error) in held {
                switch error {
                case nil: request.committed()
                case .backend(let failure)? where failure.isRetryable: request.failed()
                default: request.elsewhere()
                }
            }
        }
    }

    /// Writes the batch; the error of each item (nil when committed).
    private func write(_ items: [Item]) -> [StoreError?] {
        do {
            try database.autocommit { connection in try Self.statement(items, connection) }
            return Array(repeating: nil, count: items.count)
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

    /// The whole batch in one statement (see `PostgresDeviceStore.registration` for one device).
    static func statement(_ items: [Item], _ connection: PostgresConnection) throws {
        var tagRequests: [Int64] = [], tagNames: [String?] = [], tagTypes: [Int64] = [], tagNumbers: [String?] = [], tagTexts: [String?] = []
        for (index, item) in items.enumerated() {
            for tag in item.tags {
                tagRequests.append(Int64(index + 1))
                tagNames.append(tag.name)
                tagTypes.append(Int64(tag.value.type.rawValue))
                tagNumbers.append(tag.value.storedNumber)
                tagTexts.append(tag.value.storedText)
            }
        }
        let attributes = items.map(\.registration.attributes)
        try connection.run(sql, [
            .integers(items.map(\.appID)), .texts(items.map(\.registration.hwid)),
            .texts(attributes.map { $0.platform.map { String($0) } }), .texts(attributes.map(\.language)),
            .texts(attributes.map { $0.timezoneOffset.map { String($0) } }), .texts(attributes.map(\.appVersion)),
            .texts(attributes.map(\.osVersion)), .texts(attributes.map(\.deviceModel)), .texts(attributes.map(\.sdkVersion)),
            .texts(attributes.map { $0.notificationTypes.map { String($0) } }), .integers(items.map(\.now)),
            .texts(items.map(\.registration.pushToken)), .texts(items.map(\.registration.gateway)),
            .integers(tagRequests), .texts(tagNames), .integers(tagTypes), .texts(tagNumbers), .texts(tagTexts),
        ])
    }

    static let sql = """
        WITH input AS (
          SELECT * FROM unnest($1::bigint[], $2::text[], $3::integer[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[],
            $9::text[], $10::bigint[], $11::bigint[], $12::text[], $13::text[])
            WITH ORDINALITY AS u(app_id, hwid, platform, language, timezone_offset, app_version, os_version, device_model,
              sdk_version, notification_types, now, push_token, gateway, n)),
        existing AS (SELECT i.n, d.id FROM input i JOIN devices d ON d.app_id = i.app_id AND d.hwid = i.hwid),
        updated AS (
          UPDATE devices d SET platform = i.platform, language = COALESCE(i.language, d.language),
            timezone_offset = COALESCE(i.timezone_offset, d.timezone_offset), app_version = COALESCE(i.app_version, d.app_version),
            os_version = COALESCE(i.os_version, d.os_version), device_model = COALESCE(i.device_model, d.device_model),
            sdk_version = COALESCE(i.sdk_version, d.sdk_version),
            notification_types = COALESCE(i.notification_types, d.notification_types), updated_at = i.now,
            push_token = i.push_token, gateway = COALESCE(i.gateway, d.gateway), subscribed = true, token_invalid_reason = NULL
          FROM input i JOIN existing e ON e.n = i.n
          WHERE d.id = e.id AND (i.platform IS DISTINCT FROM d.platform OR COALESCE(i.language, d.language) IS DISTINCT FROM d.language
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
          FROM input i WHERE NOT EXISTS (SELECT 1 FROM existing e WHERE e.n = i.n) ORDER BY i.n
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
          SELECT i.n, x.id FROM inserted x JOIN input i ON i.app_id = x.app_id AND i.hwid = x.hwid)
        INSERT INTO device_tags (device_id, name, app_id, type, num, str)
        SELECT ids.id, t.name, i.app_id, t.type, t.num, t.str
        FROM unnest($14::bigint[], $15::text[], $16::integer[], $17::numeric[], $18::text[]) AS t(n, name, type, num, str)
        JOIN ids ON ids.n = t.n JOIN input i ON i.n = t.n
        ON CONFLICT (device_id, name) DO UPDATE SET type = excluded.type, num = excluded.num, str = excluded.str
        WHERE device_tags.type IS DISTINCT FROM excluded.type OR device_tags.num IS DISTINCT FROM excluded.num
          OR device_tags.str IS DISTINCT FROM excluded.str
        """
}
