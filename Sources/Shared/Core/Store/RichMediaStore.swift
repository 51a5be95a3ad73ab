/// Rich media pages (zips stored in the database with their SHA-256), the in-apps that show them
/// and what the SDKs report about both. Every write is committed before the method returns; a
/// method that throws has changed nothing.
public protocol RichMediaStore: Sendable {
    /// Stores the zip under `code`, replacing an earlier upload (its version grows); returns the page.
    func putPage(app: String, code: String, zip: [UInt8], sha256: String, now: Int64) throws(StoreError) -> RichMediaPage

    /// The application's pages, by code.
    func pages(app: String) throws(StoreError) -> [RichMediaPage]

    /// One page without its bytes, or nil.
    func page(app: String, code: String) throws(StoreError) -> RichMediaPage?

    /// One page's zip, or nil.
    func zip(app: String, code: String) throws(StoreError) -> (page: RichMediaPage, bytes: [UInt8])?

    /// Deletes a page; false when there is none. Refused (`invalid`) while an in-app shows it.
    func deletePage(app: String, code: String) throws(StoreError) -> Bool

    /// Creates or replaces the in-app `spec.code`; its page must exist (`invalid` otherwise).
    func putInApp(app: String, _ spec: InApp.Spec, now: Int64) throws(StoreError) -> InApp

    /// The application's in-apps, by code.
    func inApps(app: String) throws(StoreError) -> [InApp]

    /// Deletes an in-app with its triggers and counts; false when there is none.
    func deleteInApp(app: String, code: String) throws(StoreError) -> Bool

    /// The in-apps with a trigger on `event`, highest priority first (then the latest updated).
    func inApps(app: String, triggeredBy event: String) throws(StoreError) -> [InApp]

    /// Stores an SDK report (as `DeviceStore.record` does) and counts it against the in-app and
    /// page it names, in one transaction: when either fails neither is kept, so the client's retry
    /// counts once. Codes the application does not have count nothing.
    func record(_ report: SDKReport, counting: InAppReport, now: Int64) throws(StoreError)
}
