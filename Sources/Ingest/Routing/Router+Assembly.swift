import Core

extension Router {
    /// Ingest's whole HTTP surface over one store backend, as `herald-ingest` serves it.
    /// `onMessageCreated` runs after a message commits (the dispatcher's nudge), `onBulkJobCreated`
    /// after a bulkSetTags job does; `applicationServerKeys` are the apps' VAPID public keys that
    /// getConfig gives the Web SDK.
    convenience init(configuration: Configuration, backend: any StoreBackend, applicationServerKeys: ApplicationServerKeys, clock: any Clock,
         workers: Dispatcher, metrics: Metrics, logger: Logger,
         onMessageCreated: @escaping @Sendable () -> Void, onBulkJobCreated: @escaping @Sendable () -> Void) {
        let links = RichMediaLinks(publicURL: configuration.http.publicURL)
        let (devices, campaigns, analytics, richMedia) = (backend.devices, backend.campaigns, backend.analytics, backend.richMedia)
        self.init(
            deviceAPI: DeviceAPI(configuration: configuration, store: devices, richMedia: richMedia, inbox: campaigns, links: links,
                                 applicationServerKeys: applicationServerKeys, clock: clock),
            remoteAPI: RemoteAPI(configuration: configuration, campaigns: campaigns, devices: devices, analytics: analytics, richMedia: richMedia,
                                 links: links, clock: clock, logger: logger, onCreated: onMessageCreated),
            audienceAPI: AudienceAPI(configuration: configuration, store: devices, clock: clock, logger: logger, onCreated: onBulkJobCreated),
            eventsAPI: EventsAPI(configuration: configuration, analytics: analytics, clock: clock, logger: logger),
            richMediaAPI: RichMediaAPI(configuration: configuration, store: richMedia, links: links, clock: clock, logger: logger),
            inAppsAPI: InAppsAPI(configuration: configuration, store: richMedia, links: links, clock: clock, logger: logger),
            richMediaFiles: RichMediaFiles(store: richMedia, logger: logger),
            dashboard: Dashboard(configuration: configuration, campaigns: campaigns, analytics: analytics, richMedia: richMedia,
                                 workers: workers, clock: clock, logger: logger),
            oneSignal: OneSignalRoutes(store: devices, clock: clock, logger: logger),
            settings: configuration.http, store: devices, campaigns: campaigns, metrics: metrics, workers: workers,
            commitFailure: { backend.commitFailure }, logger: logger)
    }
}
