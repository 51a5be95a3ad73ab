import Foundation
import Synchronization
import Core
import StoreCore

/// Group commit for the Device API's writes of one device: registerDevice, setTags, applicationOpen,
/// registerUser, unregisterDevice, setSubscribed and the SDKs' reports (postEvent, pushStat,
/// messageDeliveryEvent, …), and the thread that runs the Device API's requests
/// (`PostgresBackend.submitRequest`).
///
/// Registrations and setTags calls whose tags are of a known type (`PostgresDeviceStore.batchable`:
/// values set, integer and decimal increments, list appends and removals, the badge set by
/// setTags and setBadge), with the device attributes they carry; applicationOpen's attributes and
/// time; registerUser's attributes and user; unregisterDevice's cleared token; setSubscribed's
/// subscription; and reports are written many per statement. The devices (updated when they changed,
/// inserted when new, without drawing sequence values for the existing ones), the registrations'
/// users, the tags, the list tags' items and the reports are each written by one multi-row part of
/// the statement, which holds only the parts its batch needs (`BatchStatement`). A busy server thus
/// pays one round trip and one commit for many writes.
///
/// Each of its `lanes` threads, when free, takes everything waiting at that moment: writes that
/// callers on other threads hand over and wait for, and whole requests, whose work it runs itself,
/// as SQLite's writer does: a write the work makes joins the batch instead of waiting, and the
/// request is answered once the batch has committed, without a thread of its own blocking for it.
/// Work that reaches the database in any other way is refused at its first statement (nothing has
/// happened yet) and runs again on a request thread of `PostgresDatabase`, which may block.
///
/// With two lanes, each writing on a pooled connection of its own, the next batch is gathered,
/// sent and executed while the previous one commits, so that the clients never all wait on one
/// batch's round trip. One lane gathers at a time, and a device is in at most one batch in
/// flight: a write whose device is being written waits for that batch, so that a device's writes
/// commit in the order they came. Each batch writes its devices in (application, hwid) order, so that it
/// never waits in a circle with another writer. When a batch fails for a reason other than the
/// server being away, each of its writes is made on its own, so that one bad row fails alone (a
/// request whose write failed so runs again on a request thread, which gets that failure as it
/// would have alone).
final class DeviceWriteBatcher: Sendable {
    /// One write with its tags already converted: a device write, or a report.
    struct Item: Sendable {
        enum Write: Sendable {
            /// registerDevice.
            case registration(DeviceRegistration)
            /// setTags on a device that must exist unless `attributes` name its platform.
            case tags(hwid: String, attributes: DeviceAttributes, updates: [TagUpdate])
            /// applicationOpen.
            case open(hwid: String, attributes: DeviceAttributes)
            /// registerUser: the device's attributes with `userID`, who is added to `users`.
            case user(hwid: String, userID: String, attributes: DeviceAttributes)
            /// unregisterDevice: the push token and web keys cleared (nothing when there is no such device).
            case unregistration(hwid: String)
            /// setSubscribed, on a device that must exist.
            case subscription(hwid: String, subscribed: Bool)
            /// An SDK report (postEvent, pushStat, …), appended to `reports`.
            case report(SDKReport)
        }

        let appID: Int64
        let write: Write
        /// Its tag updates.
        var tags = PostgresDeviceStore.BatchTags()
        let now: Int64

        /// The device it is about (a report's too, so that a device's reports keep their order).
        var hwid: String {
            switch write {
            case .registration(let registration): registration.hwid
            case .tags(let hwid, _, _), .open(let hwid, _), .user(let hwid, _, _), .unregistration(let hwid), .subscription(let hwid, _): hwid
            case .report(let report): report.hwid
            }
        }

        var registration: DeviceRegistration? {
            if case .registration(let registration) = write { registration } else { nil }
        }

        var report: SDKReport? {
            if case .report(let report) = write { report } else { nil }
        }

        /// The device attributes it writes; nil when it writes none.
        var attributes: DeviceAttributes? {
            switch write {
            case .registration(let registration): return registration.attributes
            case .tags(_, let attributes, _), .open(_, let attributes): return attributes
            case .user(_, let userID, var attributes):
                attributes.userID = userID
                return attributes
            case .unregistration, .subscription, .report: return nil
            }
        }

        /// `input.kind` in the batch statement (`Kind`).
        var kind: Int64 {
            switch write {
            case .registration: Kind.registration
            case .tags: Kind.tags
            case .open: Kind.open
            case .user: Kind.user
            case .unregistration: Kind.unregistration
            case .subscription: Kind.subscription
            case .report: -1
            }
        }

        /// setSubscribed's value; nil for other writes.
        var subscribed: Bool? {
            if case .subscription(_, let subscribed) = write { subscribed } else { nil }
        }
    }

    /// The numbers of `input.kind` in the batch statement. Kinds 1–3 update the device's
    /// attributes, and need a device that exists (or, alone, a platform to create it with).
    enum Kind {
        static let registration: Int64 = 0
        static let tags: Int64 = 1
        static let open: Int64 = 2
        static let user: Int64 = 3
        static let unregistration: Int64 = 4
        static let subscription: Int64 = 5
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
        private let progress: Lock<Progress>

        init(_ request: Request, writes: Int) {
            self.request = request
            progress = Lock(Progress(remaining: writes))
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
    private let queue = Lock<[Waiting]>([])
    /// Signalled for each arrival, and when a batch is done while writes wait.
    private let available = DispatchSemaphore(value: 0)
    private let stopping = Atomic<Bool>(false)
    /// Held by the lane that gathers, from taking the queue until its batch's devices are in flight,
    /// so that writes of one device are gathered, and so written, in the order they came.
    private let gathering = Lock<Flight>(Flight())

    init(database: PostgresDatabase, single: @escaping @Sendable (Item) throws(StoreError) -> Void) {
        self.database = database
        self.single = single
        let started = DispatchSemaphore(value: 0)
        for lane in 0..<Self.lanes {
            let thread = Thread(named: "pg-batch-\(lane)") { [self] in
                database.collector.adoptCurrentThread(lane)
                started.signal()
                run()
            }
            thread.start()
        }
        for _ in 0..<Self.lanes { started.wait() }
    }

    /// Ends the lanes once nothing waits.
    func stop() {
        stopping.store(true, ordering: .relaxed)
        for _ in 0..<Self.lanes { available.signal() }
    }

    /// Writes `items` with whatever else is waiting; returns once they are committed, throwing the
    /// first one's error. On a lane, inside a request's work, they join the batch being gathered instead.
    func register(_ items: [Item]) throws(StoreError) {
        if database.collector.collect(items) { return }
        let pending = items.map(Pending.init)
        for write in pending { enqueue(.call(write)) }
        for write in pending { write.done.wait() }
        if let error = pending.lazy.compactMap(\.error).first { throw error }
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
            // Each entry moved once, in its device's order (entries are large to swap).
            let devices = batch.map(\.device)
            batch = devices.indices.sorted { devices[$0] < devices[$1] }.map { batch[$0] }
            let errors = write(batch.map(\.item))
            let more = gathering.withLock { flight -> Bool in
                flight.devices.subtract(devices)
                return !flight.waiting.isEmpty
            }
            if more { available.signal() }
            // Answers go to a few I/O loops: each is woken once, with all of its answers.
            Wakeup.deferringSignals {
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
    }

    /// Writes the batch; the error of each item (nil when committed).
    private func write(_ items: [Item]) -> [StoreError?] {
        do {
            // Upserts may run twice when the connection is lost with the outcome unknown; a report,
            // an increment or a list's append or removal may not, so a batch holding one is not run
            // again then: its writes fail with the loss (503), their outcome unknown to the client.
            // (In a transaction of its own, a loss before COMMIT would be known to have committed
            // nothing, at the price of two more round trips for nearly every batch of the SDKs' mix.)
            let idempotent = !items.contains { $0.report != nil || $0.tags.isRelative }
            let missing = try database.autocommit(idempotent: idempotent, on: database.batchPool) { connection in
                try Self.statement(items, connection)
            }
            // A device that does not exist yet: a setTags or applicationOpen naming its platform
            // creates it, and without one fails; the ordinary path knows which.
            return items.indices.map { missing.contains($0) ? alone(items[$0]) : nil }
        } catch {
            if case .backend(let failure) = error, failure.isRetryable {
                return Array(repeating: error, count: items.count)
            }
            return items.map(alone)
        }
    }

    /// Makes one write on its own; its error, or nil.
    private func alone(_ item: Item) -> StoreError? {
        do throws(StoreError) {
            try single(item)
            return nil
        } catch {
            return error
        }
    }

    /// The whole batch in one statement (see `PostgresDeviceStore.registration` for one device);
    /// returns the indexes of the setTags and applicationOpen writes whose device does not exist,
    /// which wrote nothing.
    static func statement(_ items: [Item], _ connection: PostgresConnection) throws -> Set<Int> {
        let devices = items.indices.filter { items[$0].report == nil }
        var statement = BatchStatement(writes: devices.map { items[$0] })
        statement.addReports(items.filter { $0.report != nil })
        return Set(try connection.rows(statement.sql, statement.values) { devices[Int($0.int(0)) - 1] })
    }
}

/// The batch statement of a batch's device writes, made of the parts those writes need: each part
/// a statement does not use still costs the server, on every execution, an executor node and the
/// locks and indexes of its table (all of them together, on a batch of plain registrations, ~0.15 ms
/// of a 0.45 ms statement, measured with pgbench on this machine), and a batch is mostly one kind.
private struct BatchStatement {
    private typealias Kind = DeviceWriteBatcher.Kind

    /// The common table expressions, in order.
    private var parts: [String] = []
    private(set) var values: [PostgresValue] = []
    /// The final SELECT: the setTags and applicationOpen writes whose device does not exist.
    private var missing = "SELECT 1 WHERE false"

    var sql: String { (parts.isEmpty ? "" : "WITH " + parts.joined(separator: ",\n")) + "\n" + missing }

    /// Adds `value` to the parameters; its placeholder.
    private mutating func bind(_ value: PostgresValue) -> String {
        values.append(value)
        return "$\(values.count)"
    }

    /// The entries of every write, each with its write's row in `input` (`n`, from 1).
    private static func rows<Entry>(_ writes: [DeviceWriteBatcher.Item],
                                    _ entries: (DeviceWriteBatcher.Item) -> [Entry]) -> [(row: Int64, entry: Entry)] {
        writes.enumerated().flatMap { index, write in entries(write).map { (Int64(index + 1), $0) } }
    }

    init(writes: [DeviceWriteBatcher.Item]) {
        guard !writes.isEmpty else { return }
        let attributes = writes.map { $0.attributes ?? DeviceAttributes() }
        let registrations = writes.map(\.registration)
        var columns: [(name: String, type: String, value: PostgresValue)] = [
            ("app_id", "bigint", .integers(writes.map(\.appID))), ("hwid", "text", .texts(writes.map(\.hwid))),
            ("platform", "integer", .texts(attributes.map { $0.platform.map { String($0) } })),
            ("language", "text", .texts(attributes.map(\.language))),
            ("timezone_offset", "bigint", .texts(attributes.map { $0.timezoneOffset.map { String($0) } })),
            ("app_version", "text", .texts(attributes.map(\.appVersion))), ("os_version", "text", .texts(attributes.map(\.osVersion))),
            ("device_model", "text", .texts(attributes.map(\.deviceModel))), ("sdk_version", "text", .texts(attributes.map(\.sdkVersion))),
            ("notification_types", "bigint", .texts(attributes.map { $0.notificationTypes.map { String($0) } })),
            ("now", "bigint", .integers(writes.map(\.now))), ("push_token", "text", .texts(registrations.map { $0?.pushToken })),
            ("gateway", "text", .texts(registrations.map { $0?.gateway })),
            ("web_p256dh", "text", .texts(registrations.map { $0?.webKeys?.p256dh })),
            ("web_auth", "text", .texts(registrations.map { $0?.webKeys?.auth })), ("kind", "integer", .integers(writes.map(\.kind))),
            ("user_id", "text", .texts(attributes.map(\.userID))),
        ]
        let badged = writes.contains { $0.tags.badge != nil }
        if badged { columns.append(("badge", "bigint", .texts(writes.map { $0.tags.badge.map { String($0) } }))) }
        let subscribes = writes.contains { $0.subscribed != nil }
        if subscribes { columns.append(("subscribed", "boolean", .booleans(writes.map { $0.subscribed ?? false }))) }
        let arrays = columns.map { "\(bind($0.value))::\($0.type)[]" }
        parts.append("""
            input AS (
              SELECT * FROM unnest(\(arrays.joined(separator: ", ")))
                WITH ORDINALITY AS u(\(columns.map(\.name).joined(separator: ", ")), n))
            """)
        parts.append(Self.existing)
        let registers = writes.contains { $0.kind == Kind.registration }
        if registers { parts += [Self.registered, Self.inserted] }
        if writes.contains(where: { (Kind.tags...Kind.user).contains($0.kind) }) {
            parts.append(badged ? Self.touchedWithBadges : Self.touchedWithoutBadges)
        }
        if writes.contains(where: { [Kind.registration, Kind.user].contains($0.kind) && $0.attributes?.userID != nil }) {
            parts.append(Self.usersAdded)
        }
        if writes.contains(where: { $0.kind == Kind.unregistration }) { parts.append(Self.unregistered) }
        if subscribes { parts.append(Self.subscribed) }
        let tagged = writes.contains { !$0.tags.values.isEmpty }, counted = writes.contains { !$0.tags.steps.isEmpty }
        let summed = writes.contains { !$0.tags.decimalSteps.isEmpty }, edited = writes.contains { !$0.tags.edits.isEmpty }
        if tagged || counted || summed || edited {
            // Each write's device id: the existing devices', then the new ones'.
            parts.append("""
                ids AS (
                  SELECT n, id FROM existing\(registers ? Self.insertedIDs : ""))
                """)
        }
        if tagged { addTags(writes, registers: registers) }
        if counted { addSteps(writes) }
        if summed { addDecimalSteps(writes) }
        if edited { addEdits(writes) }
        // An unregistration of a device that does not exist does nothing, as it does alone.
        missing = """
            SELECT i.n FROM input i WHERE i.kind > \(Kind.registration) AND i.kind <> \(Kind.unregistration)
              AND NOT EXISTS (SELECT 1 FROM existing e WHERE e.n = i.n)
            """
    }

    /// The reports, appended to `reports`.
    mutating func addReports(_ reports: [DeviceWriteBatcher.Item]) {
        guard !reports.isEmpty else { return }
        let first = values.count + 1
        values += PostgresDeviceStore.reportColumns(reports.compactMap(\.report), appIDs: reports.map(\.appID), receivedAt: reports.map(\.now))
        parts.append("reported AS (\(PostgresDeviceStore.reportsInsert(from: first)))")
    }

    /// The tags set, and a list tag's items: those no longer in the list go, new ones come.
    /// The `registers` batches have new devices, whose tags are inserted without `ON CONFLICT`.
    private mutating func addTags(_ writes: [DeviceWriteBatcher.Item], registers: Bool) {
        let tags = TagValue.columns(writes.map(\.tags.values)).map { bind($0) }
        parts.append("""
            tags AS (SELECT * FROM unnest(\(tags[0])::bigint[], \(tags[1])::text[], \(tags[2])::integer[], \(tags[3])::numeric[],
              \(tags[4])::text[]) AS t(n, name, type, num, str))
            """)
        parts.append(Self.taggedExisting)
        if registers { parts.append(Self.taggedNew) }
        // A list set to no items still drops its stored ones.
        guard writes.contains(where: { $0.tags.values.contains { $0.value.type == .list } }) else { return }
        let items = Self.rows(writes) { write in
            write.tags.values.flatMap { name, value -> [(name: String, item: String)] in
                guard case .list(let items) = value else { return [] }
                return items.map { (name, $0) }
            }
        }
        parts.append("""
            items AS (
              SELECT ids.id, l.name, l.item, i.app_id
              FROM unnest(\(bind(.integers(items.map(\.row))))::bigint[], \(bind(.texts(items.map(\.entry.name))))::text[],
                \(bind(.texts(items.map(\.entry.item))))::text[])
                AS l(n, name, item)
              JOIN ids ON ids.n = l.n JOIN input i ON i.n = l.n)
            """)
        parts += [Self.dropped, Self.added]
    }

    /// Integer increments, added to the stored value (a sum beyond bigint fails the batch, then the write alone).
    private mutating func addSteps(_ writes: [DeviceWriteBatcher.Item]) {
        let steps = Self.rows(writes) { $0.tags.steps }
        parts.append("""
            counted AS (
              INSERT INTO device_tags (device_id, name, app_id, type, num)
              SELECT ids.id, c.name, i.app_id, \(TagType.integer.rawValue), c.step
              FROM unnest(\(bind(.integers(steps.map(\.row))))::bigint[], \(bind(.texts(steps.map(\.entry.name))))::text[],
                \(bind(.integers(steps.map(\.entry.step))))::bigint[])
                AS c(n, name, step)
              JOIN ids ON ids.n = c.n JOIN input i ON i.n = c.n
              ON CONFLICT (device_id, name) DO UPDATE SET num = (device_tags.num + excluded.num)::bigint)
            """)
    }

    /// Decimal increments, added to the stored value as `TagRules.apply` adds them: in double
    /// precision, to 0 when the tag holds no decimal. The sum is stored as float8's text, the
    /// shortest that reads back as the same double, as Swift writes it (`extra_float_digits` ≥ 1,
    /// PostgreSQL's default); a sum beyond double fails the batch, then the write alone.
    private mutating func addDecimalSteps(_ writes: [DeviceWriteBatcher.Item]) {
        let steps = Self.rows(writes) { $0.tags.decimalSteps }
        parts.append("""
            summed AS (
              INSERT INTO device_tags (device_id, name, app_id, type, num)
              SELECT ids.id, c.name, i.app_id, \(TagType.decimal.rawValue), c.step::float8::text::numeric
              FROM unnest(\(bind(.integers(steps.map(\.row))))::bigint[], \(bind(.texts(steps.map(\.entry.name))))::text[],
                \(bind(.texts(steps.map { "\($0.entry.step)" })))::text[])
                AS c(n, name, step)
              JOIN ids ON ids.n = c.n JOIN input i ON i.n = c.n
              ON CONFLICT (device_id, name) DO UPDATE SET type = excluded.type, str = NULL,
                num = ((CASE WHEN device_tags.type = excluded.type THEN device_tags.num::float8 ELSE 0 END) + excluded.num::float8)::text::numeric)
            """)
    }

    /// List appends and removals: the list as `TagRules.apply` makes it (the stored items in their
    /// order, without those removed, then those appended that it lacks, each once, in the order
    /// given; an empty list when there was none), written with its items as setTags writes a list.
    private mutating func addEdits(_ writes: [DeviceWriteBatcher.Item]) {
        let edits = Self.rows(writes) { $0.tags.edits }
        parts.append("""
            edits AS (
              SELECT ids.id, e.name, i.app_id, COALESCE(outcome.list, '[]') AS list
              FROM unnest(\(bind(.integers(edits.map(\.row))))::bigint[], \(bind(.texts(edits.map(\.entry.name))))::text[],
                \(bind(.booleans(edits.map(\.entry.remove))))::boolean[],
                \(bind(.texts(edits.map { TagValue.list($0.entry.items).storedText })))::text[]) AS e(n, name, remove, items)
              JOIN ids ON ids.n = e.n JOIN input i ON i.n = e.n
              LEFT JOIN device_tags t ON t.device_id = ids.id AND t.name = e.name AND t.type = \(TagType.list.rawValue)
              CROSS JOIN LATERAL (
                SELECT array_to_json(array_agg(l.item ORDER BY l.appended, l.k))::text AS list FROM (
                  SELECT c.item, false AS appended, c.k FROM json_array_elements_text(COALESCE(t.str, '[]')::json) WITH ORDINALITY AS c(item, k)
                  WHERE NOT (e.remove AND c.item IN (SELECT json_array_elements_text(e.items::json)))
                  UNION ALL
                  SELECT a.item, true, min(a.k) FROM json_array_elements_text(e.items::json) WITH ORDINALITY AS a(item, k)
                  WHERE NOT e.remove AND a.item NOT IN (SELECT json_array_elements_text(COALESCE(t.str, '[]')::json))
                  GROUP BY a.item) l) outcome)
            """)
        parts += [Self.edited, Self.editedDropped, Self.editedAdded]
    }

    /// The devices that exist, and whether the attributes given change them (COALESCE: those not
    /// given stay). One index lookup per row: OFFSET 0 keeps the lookup from becoming a join, which
    /// a generic plan made while the table was small turns into a scan of every device for each batch.
    private static let existing = """
        existing AS (
          SELECT i.n, d.id,
            ROW(\(DeviceColumns.attributes.map { "COALESCE(i.\($0.name), d.\($0.name))" }.joined(separator: ", ")))
            IS DISTINCT FROM ROW(\(DeviceColumns.attributes.map { "d.\($0.name)" }.joined(separator: ", "))) AS changed
          FROM input i CROSS JOIN LATERAL (
            SELECT id, \(DeviceColumns.attributes.map(\.name).joined(separator: ", ")) FROM devices WHERE app_id = i.app_id AND hwid = i.hwid OFFSET 0) d)
        """

    /// `name = COALESCE(i.name, d.name)` for `attributes`: the input's value, or the stored one when not given.
    private static func kept(_ attributes: [DeviceColumns.Attribute]) -> String {
        DeviceColumns.kept(attributes, given: { "i.\($0.name)" }, stored: { "d.\($0.name)" })
    }

    /// registerDevice: attributes, token, gateway, web keys and subscription, rewritten only when something changed.
    private static let registered = """
        registered AS (
          UPDATE devices d SET platform = i.platform, \(kept(DeviceColumns.optionalAttributes)), updated_at = i.now,
            push_token = i.push_token, gateway = COALESCE(i.gateway, d.gateway), web_p256dh = i.web_p256dh, web_auth = i.web_auth,
            subscribed = true, token_invalid_reason = NULL
          FROM input i JOIN existing e ON e.n = i.n
          WHERE d.id = e.id AND i.kind = \(Kind.registration) AND (e.changed OR i.push_token IS DISTINCT FROM d.push_token
            OR COALESCE(i.gateway, d.gateway) IS DISTINCT FROM d.gateway OR i.web_p256dh IS DISTINCT FROM d.web_p256dh
            OR i.web_auth IS DISTINCT FROM d.web_auth OR NOT d.subscribed OR d.token_invalid_reason IS NOT NULL)
          RETURNING d.id)
        """

    /// registerDevice of a new device: its id drawn first (`new_devices`, so that `ids` needs no
    /// join of the inserted rows back to `input`), then a plain insert (an upsert costs PostgreSQL
    /// a third more per row). Should another writer have inserted the device since `existing`
    /// looked, the insert waits for it and fails the batch, and the batch's writes are made alone,
    /// with the upsert.
    private static let inserted = """
        new_devices AS (
          SELECT i.*, nextval(s.id) AS id FROM input i CROSS JOIN (SELECT pg_get_serial_sequence('devices', 'id')::regclass AS id) s
          WHERE i.kind = \(Kind.registration) AND NOT EXISTS (SELECT 1 FROM existing e WHERE e.n = i.n) ORDER BY i.n),
        inserted AS (
          INSERT INTO devices (id, \(DeviceColumns.registered))
          SELECT i.id, i.app_id, i.hwid, \(DeviceColumns.attributes.map { "i.\($0.name)" }.joined(separator: ", ")), i.now, i.now,
            i.push_token, i.gateway, i.web_p256dh, i.web_auth
          FROM new_devices i ORDER BY i.n)
        """

    /// `touched` for a batch without badges, and with them: written once, not per batch.
    private static let touchedWithoutBadges = touched(badged: false), touchedWithBadges = touched(badged: true)

    /// setTags, applicationOpen and registerUser: the attributes when they changed (updated_at with
    /// them), an open's time, and when the batch sets badges (`input.badge`), the badge.
    private static func touched(badged: Bool) -> String {
        """
        touched AS (
          UPDATE devices d SET \(kept(DeviceColumns.attributes)),
            updated_at = CASE WHEN e.changed THEN i.now ELSE d.updated_at END,
            last_open_at = CASE WHEN i.kind = \(Kind.open) THEN i.now ELSE d.last_open_at END\(badged ? ", badge = COALESCE(i.badge, d.badge)" : "")
          FROM input i JOIN existing e ON e.n = i.n
          WHERE d.id = e.id AND i.kind BETWEEN \(Kind.tags) AND \(Kind.user)
            AND (e.changed OR i.kind = \(Kind.open)\(badged ? " OR i.badge <> d.badge" : ""))
          RETURNING d.id)
        """
    }

    /// The user of a registration, and of a registerUser whose device exists (one whose device does
    /// not is made alone, which may refuse it), as each adds it alone.
    private static let usersAdded = """
        users_added AS (
          INSERT INTO users (app_id, user_id, created_at, updated_at)
          SELECT DISTINCT ON (app_id, user_id) app_id, user_id, now, now FROM input i
          WHERE user_id IS NOT NULL
            AND (kind = \(Kind.registration) OR kind = \(Kind.user) AND EXISTS (SELECT 1 FROM existing e WHERE e.n = i.n))
          ORDER BY app_id, user_id
          ON CONFLICT DO NOTHING)
        """

    /// unregisterDevice: the push token and web keys cleared.
    private static let unregistered = """
        unregistered AS (
          UPDATE devices d SET push_token = NULL, web_p256dh = NULL, web_auth = NULL, updated_at = i.now
          FROM input i JOIN existing e ON e.n = i.n
          WHERE d.id = e.id AND i.kind = \(Kind.unregistration))
        """

    /// setSubscribed.
    private static let subscribed = """
        subscribed AS (
          UPDATE devices d SET subscribed = i.subscribed, updated_at = i.now
          FROM input i JOIN existing e ON e.n = i.n
          WHERE d.id = e.id AND i.kind = \(Kind.subscription))
        """

    /// The new devices' ids, for `ids`.
    private static let insertedIDs = """

          UNION ALL
          SELECT n, id FROM new_devices
        """

    /// `tagged` for the devices that exist and for the new ones: written once, not per batch.
    private static let taggedExisting = tagged(newDevices: false), taggedNew = tagged(newDevices: true)

    /// The tags set on the devices that exist, or on the new ones. A new device's tags are plain
    /// inserts (an upsert costs PostgreSQL twice as much per row): its id is new.
    private static func tagged(newDevices: Bool) -> String {
        let upsert = """

              ON CONFLICT (device_id, name) DO UPDATE SET type = excluded.type, num = excluded.num, str = excluded.str
              WHERE device_tags.type IS DISTINCT FROM excluded.type OR device_tags.num IS DISTINCT FROM excluded.num
                OR device_tags.str IS DISTINCT FROM excluded.str
            """
        return """
            \(newDevices ? "tagged_new" : "tagged") AS (
              INSERT INTO device_tags (device_id, name, app_id, type, num, str)
              SELECT d.id, t.name, i.app_id, t.type, t.num, t.str
              FROM tags t JOIN \(newDevices ? "new_devices" : "existing") d ON d.n = t.n JOIN input i ON i.n = t.n\(newDevices ? "" : upsert))
            """
    }

    private static let edited = """
        edited AS (
          INSERT INTO device_tags (device_id, name, app_id, type, str)
          SELECT id, name, app_id, \(TagType.list.rawValue), list FROM edits
          ON CONFLICT (device_id, name) DO UPDATE SET type = excluded.type, num = NULL, str = excluded.str
          WHERE device_tags.type IS DISTINCT FROM excluded.type OR device_tags.num IS NOT NULL
            OR device_tags.str IS DISTINCT FROM excluded.str)
        """

    private static let editedDropped = """
        edited_dropped AS (
          DELETE FROM device_tag_items x USING edits e
          WHERE x.device_id = e.id AND x.name = e.name AND x.item NOT IN (SELECT json_array_elements_text(e.list::json)))
        """

    private static let editedAdded = """
        edited_added AS (
          INSERT INTO device_tag_items (device_id, name, item, app_id)
          SELECT e.id, e.name, l.item, e.app_id FROM edits e CROSS JOIN LATERAL json_array_elements_text(e.list::json) AS l(item)
          ON CONFLICT DO NOTHING)
        """

    /// A list tag's stored items that its new list (`str`, a JSON array) lacks. Each is looked
    /// for in its own tag's list: a search of the whole batch's `items` became a nested loop over
    /// all of them for every stored item.
    private static let dropped = """
        dropped AS (
          DELETE FROM device_tag_items x USING tags t JOIN ids ON ids.n = t.n
          WHERE t.type = \(TagType.list.rawValue) AND x.device_id = ids.id AND x.name = t.name
            AND x.item NOT IN (SELECT json_array_elements_text(t.str::json)))
        """

    private static let added = """
        added AS (INSERT INTO device_tag_items (device_id, name, item, app_id) SELECT id, name, item, app_id FROM items ON CONFLICT DO NOTHING)
        """
}
