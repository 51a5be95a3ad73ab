/// An in-app message: a rich media page the SDK shows inside the app, listed by `getInApps` and
/// shown when an event it is triggered by arrives through `postEvent`.
public struct InApp: Sendable, Equatable {
    /// What the API sets; the rest of an in-app is kept by the store.
    public struct Spec: Sendable, Equatable {
        public var code: String
        /// The rich media page the in-app shows (it must exist in the same application).
        public var richMedia: String
        /// The SDK's presentation style (`presentationStyleKey`).
        public var layout: Layout
        /// The SDK's `closeButtonType`.
        public var closeButtonType: Int
        /// When several in-apps are triggered by one event, the highest priority is shown.
        public var priority: Int
        /// Android shows a required in-app even when the app asks it not to.
        public var required: Bool
        public var triggers: [InAppTrigger]

        public init(code: String, richMedia: String, layout: Layout = .fullscreen, closeButtonType: Int = 0, priority: Int = 0,
                    required: Bool = false, triggers: [InAppTrigger] = []) {
            self.code = code
            self.richMedia = richMedia
            self.layout = layout
            self.closeButtonType = closeButtonType
            self.priority = priority
            self.required = required
            self.triggers = triggers
        }
    }

    /// The presentation styles the SDKs know.
    public enum Layout: String, Sendable, CaseIterable {
        case fullscreen, centerbox, topbanner, bottombanner
    }

    public var app: String
    public var spec: Spec
    /// The page it shows, as stored now.
    public var page: RichMediaPage
    /// `triggerInAppAction` reports: how often the SDK showed it.
    public var shown: Int
    /// `richMediaAction` reports that named it.
    public var actions: Int
    public var createdAt: Int64
    public var updatedAt: Int64

    package init(app: String, spec: Spec, page: RichMediaPage, shown: Int, actions: Int, createdAt: Int64, updatedAt: Int64) {
        self.app = app
        self.spec = spec
        self.page = page
        self.shown = shown
        self.actions = actions
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// What an SDK reported about an in-app or a rich media page.
public enum InAppReport: Sendable, Equatable {
    /// `triggerInAppAction`: the SDK showed the in-app.
    case shown(inApp: String)
    /// `richMediaAction`: the user acted on a page, shown as an in-app (`inApp`) or from a push.
    case action(inApp: String?, richMedia: String?)
}
