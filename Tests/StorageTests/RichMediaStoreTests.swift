import Foundation
import Testing
import Core
import SDKClient
import TestSupport

/// Rich media pages and in-apps against every backend: the zip comes back byte for byte after a
/// reopen, versions grow, in-apps keep their triggers, a refused write changes nothing, and the
/// SDKs' reports count only against codes that exist.
@Suite struct RichMediaStoreTests {
    @Test(arguments: Backend.allCases) func pagesComeBackByteForByteAndTheirVersionGrowsWithEachUpload(_ backend: Backend) throws {
        try RichMediaStoreContract(backend).pagesComeBackByteForByteAndTheirVersionGrowsWithEachUpload()
    }

    @Test(arguments: Backend.allCases) func inAppsKeepTheirTriggersAndAPageInUseCannotBeDeleted(_ backend: Backend) throws {
        try RichMediaStoreContract(backend).inAppsKeepTheirTriggersAndAPageInUseCannotBeDeleted()
    }

    @Test(arguments: Backend.allCases) func reportsCountOnlyAgainstCodesThatExist(_ backend: Backend) throws {
        try RichMediaStoreContract(backend).reportsCountOnlyAgainstCodesThatExist()
    }

    @Test(arguments: Backend.allCases) func aReportAndItsCountAreKeptTogetherOrNotAtAll(_ backend: Backend) throws {
        try RichMediaStoreContract(backend).aReportAndItsCountAreKeptTogetherOrNotAtAll()
    }
}

/// The bodies of `RichMediaStoreTests`, on a fresh database of one backend.
struct RichMediaStoreContract {
    let fixture: StoreFixture
    let store: any RichMediaStore
    static let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s"),
                       AppConfiguration(code: "APP-2", name: "Two", apiToken: "u", sink: "s")]
    static let now: Int64 = 1_780_000_000

    init(_ backend: Backend) throws {
        fixture = try StoreFixture(backend)
        store = try fixture.open(apps: Self.apps).richMedia
    }

    /// A zip-sized buffer with every byte value (bytea and blob must keep them all).
    static func zip(_ seed: UInt64, count: Int = 200_000) -> [UInt8] {
        var random = SplitMix64(seed: seed)
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &random) }
    }

    func pagesComeBackByteForByteAndTheirVersionGrowsWithEachUpload() throws {
        let first = Self.zip(1), second = Self.zip(2, count: 1000)
        let stored = try store.putPage(app: "APP-1", code: "sale", zip: first, sha256: "aa", now: Self.now)
        #expect(stored.version == Self.now && stored.size == first.count && stored.sha256 == "aa" && stored.createdAt == Self.now)
        // Re-uploaded within the same second: a new version all the same.
        let replaced = try store.putPage(app: "APP-1", code: "sale", zip: second, sha256: "bb", now: Self.now)
        #expect(replaced.version == Self.now + 1 && replaced.size == 1000 && replaced.createdAt == Self.now)
        let later = try store.putPage(app: "APP-1", code: "sale", zip: first, sha256: "aa", now: Self.now + 100)
        #expect(later.version == Self.now + 100 && later.updatedAt == Self.now + 100)
        _ = try store.putPage(app: "APP-1", code: "about", zip: second, sha256: "bb", now: Self.now)

        // Read through a second open of the same database, as another process would.
        let reopened = try fixture.open(apps: Self.apps).richMedia
        let found = try #require(try reopened.zip(app: "APP-1", code: "sale"))
        #expect(found.bytes == first)
        #expect(found.page == later)
        #expect(try reopened.page(app: "APP-1", code: "sale") == later)
        #expect(try reopened.pages(app: "APP-1").map(\.code) == ["about", "sale"])
        #expect(try reopened.pages(app: "APP-2").isEmpty)
        #expect(try reopened.zip(app: "APP-2", code: "sale") == nil)
        #expect(try reopened.deletePage(app: "APP-1", code: "about"))
        #expect(try !reopened.deletePage(app: "APP-1", code: "about"))
        #expect(try store.pages(app: "APP-1").map(\.code) == ["sale"])

        // Codes list in byte order on both backends, whatever the PostgreSQL server's collation
        // (the test server's is ICU's en-US, which would give Sale-b, sale, Zoo, …).
        for code in ["sale-b", "Zoo", "Sale", "saleb", "a", "B"] {
            _ = try store.putPage(app: "APP-1", code: code, zip: second, sha256: "bb", now: Self.now)
        }
        #expect(try store.pages(app: "APP-1").map(\.code) == ["B", "Sale", "Zoo", "a", "sale", "sale-b", "saleb"])
    }

    func inAppsKeepTheirTriggersAndAPageInUseCannotBeDeleted() throws {
        _ = try store.putPage(app: "APP-1", code: "welcome", zip: Self.zip(3, count: 10), sha256: "cc", now: Self.now)
        _ = try store.putPage(app: "APP-1", code: "promo", zip: Self.zip(4, count: 10), sha256: "dd", now: Self.now)
        let purchase = InAppTrigger(event: "Purchase", conditions: [try AttributeCondition(json: ["amount", "GTE", 10])])
        // A page of another application, or none, is refused and stores nothing.
        #expect(throws: StoreError.self) { try store.putInApp(app: "APP-2", InApp.Spec(code: "x", richMedia: "welcome"), now: Self.now) }
        #expect(throws: StoreError.self) { try store.putInApp(app: "APP-1", InApp.Spec(code: "x", richMedia: "missing"), now: Self.now) }
        #expect(try fixture.count("SELECT count(*) FROM in_apps") == 0)

        let low = try store.putInApp(app: "APP-1", InApp.Spec(code: "low", richMedia: "welcome", layout: .bottombanner, closeButtonType: 1,
                                                             priority: 1, required: false, triggers: [purchase, InAppTrigger(event: "Open")]),
                                     now: Self.now)
        #expect(low.spec.triggers == [purchase, InAppTrigger(event: "Open")])
        #expect(low.page.code == "welcome" && low.spec.layout == .bottombanner && low.spec.closeButtonType == 1 && low.createdAt == Self.now)
        _ = try store.putInApp(app: "APP-1", InApp.Spec(code: "high", richMedia: "promo", priority: 5, required: true,
                                                        triggers: [InAppTrigger(event: "Purchase")]), now: Self.now)
        #expect(try store.inApps(app: "APP-1", triggeredBy: "Purchase").map(\.spec.code) == ["high", "low"])
        #expect(try store.inApps(app: "APP-1", triggeredBy: "Open").map(\.spec.code) == ["low"])
        #expect(try store.inApps(app: "APP-1", triggeredBy: "Other").isEmpty)
        #expect(try store.inApps(app: "APP-2", triggeredBy: "Purchase").isEmpty)

        // Replacing an in-app replaces its triggers and page, and keeps when it was created.
        let replaced = try store.putInApp(app: "APP-1", InApp.Spec(code: "low", richMedia: "promo", triggers: [InAppTrigger(event: "Exit")]),
                                          now: Self.now + 5)
        #expect(replaced.createdAt == Self.now && replaced.updatedAt == Self.now + 5 && replaced.page.code == "promo")
        #expect(try store.inApps(app: "APP-1", triggeredBy: "Open").isEmpty)
        #expect(try store.inApps(app: "APP-1").map(\.spec.code) == ["high", "low"])
        #expect(try store.inApps(app: "APP-1").first { $0.spec.code == "high" }?.spec.required == true)

        #expect(throws: StoreError.self) { try store.deletePage(app: "APP-1", code: "promo") }
        #expect(try store.page(app: "APP-1", code: "promo") != nil)
        #expect(try store.deletePage(app: "APP-1", code: "welcome"))
        #expect(try store.deleteInApp(app: "APP-1", code: "low"))
        #expect(try store.deleteInApp(app: "APP-1", code: "high"))
        #expect(try !store.deleteInApp(app: "APP-1", code: "high"))
        #expect(try fixture.count("SELECT count(*) FROM in_app_triggers") == 0)
        #expect(try store.deletePage(app: "APP-1", code: "promo"))
    }

    /// A triggerInAppAction or richMediaAction report of `app`, as the Device API stores it.
    static func report(app: String = "APP-1") -> SDKReport {
        SDKReport(kind: .action, app: app, hwid: "device", userID: nil, platform: 1, name: "triggerInAppAction", hash: nil,
                  body: ["action": "show"], timestampUTC: nil, timestampCurrent: nil)
    }

    func reportsCountOnlyAgainstCodesThatExist() throws {
        _ = try store.putPage(app: "APP-1", code: "page", zip: [1, 2, 3], sha256: "ee", now: Self.now)
        _ = try store.putInApp(app: "APP-1", InApp.Spec(code: "inapp", richMedia: "page"), now: Self.now)
        for _ in 0..<3 { try store.record(Self.report(), counting: .shown(inApp: "inapp"), now: Self.now) }
        try store.record(Self.report(), counting: .action(inApp: "inapp", richMedia: "page"), now: Self.now)
        try store.record(Self.report(), counting: .action(inApp: nil, richMedia: "page"), now: Self.now)
        try store.record(Self.report(), counting: .shown(inApp: "unknown"), now: Self.now)
        try store.record(Self.report(), counting: .action(inApp: "unknown", richMedia: "unknown"), now: Self.now)
        try store.record(Self.report(app: "APP-2"), counting: .shown(inApp: "inapp"), now: Self.now)
        let inApp = try #require(try store.inApps(app: "APP-1").first)
        #expect(inApp.shown == 3 && inApp.actions == 1)
        #expect(try store.page(app: "APP-1", code: "page")?.actions == 2)
        #expect(try fixture.count("SELECT count(*) FROM in_apps") == 1)
        // Every report is kept, counted or not.
        #expect(try fixture.count("SELECT count(*) FROM reports") == 8)
    }

    /// When the count cannot be written (here a trigger refuses it), the report is not kept
    /// either: the client is told to retry, and its retry is stored and counted once.
    func aReportAndItsCountAreKeptTogetherOrNotAtAll() throws {
        _ = try store.putPage(app: "APP-1", code: "page", zip: [1, 2, 3], sha256: "ee", now: Self.now)
        _ = try store.putInApp(app: "APP-1", InApp.Spec(code: "inapp", richMedia: "page"), now: Self.now)
        try fixture.execute(
            sqlite: "CREATE TRIGGER refuse_count BEFORE UPDATE OF shown ON in_apps BEGIN SELECT RAISE(ABORT, 'count refused'); END",
            postgres: """
                CREATE FUNCTION refuse_count() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'count refused'; END $$;
                CREATE TRIGGER refuse_count BEFORE UPDATE OF shown ON in_apps FOR EACH ROW EXECUTE FUNCTION refuse_count();
                """)
        #expect(throws: StoreError.self) { try store.record(Self.report(), counting: .shown(inApp: "inapp"), now: Self.now) }
        #expect(try fixture.count("SELECT count(*) FROM reports") == 0)
        #expect(try store.inApps(app: "APP-1").first?.shown == 0)

        try fixture.execute(sqlite: "DROP TRIGGER refuse_count", postgres: "DROP TRIGGER refuse_count ON in_apps")
        try store.record(Self.report(), counting: .shown(inApp: "inapp"), now: Self.now)
        #expect(try fixture.count("SELECT count(*) FROM reports") == 1)
        #expect(try store.inApps(app: "APP-1").first?.shown == 1)
    }
}
