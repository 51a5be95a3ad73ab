/// A rich media page Herald hosts: a zip (an `index.html` and its assets) uploaded through
/// `PUT /api/v1/apps/<app>/rich-media/<code>` and served at `/rich-media/<app>/<code>.zip`.
public struct RichMediaPage: Sendable, Equatable {
    public var app: String
    public var code: String
    /// Lower-case hex SHA-256 of the zip: its ETag, and how a client tells two uploads apart.
    public var sha256: String
    public var size: Int
    /// Grows with every upload of the code (the upload's unix time, or one more than the last
    /// version when that is not smaller, so two uploads within a second differ): the `ts` the SDKs
    /// cache a page by.
    public var version: Int64
    /// `richMediaAction` reports that named this page.
    public var actions: Int
    public var createdAt: Int64
    public var updatedAt: Int64

    package init(app: String, code: String, sha256: String, size: Int, version: Int64, actions: Int, createdAt: Int64, updatedAt: Int64) {
        self.app = app
        self.code = code
        self.sha256 = sha256
        self.size = size
        self.version = version
        self.actions = actions
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// Where a push's rich media page is and which version it is: the payload's `rm` key, which the
/// SDKs read as `{"url", "ts", "tags"}`.
public struct RichMediaLink: Sendable, Equatable, Codable {
    public var url: String
    public var ts: String

    public init(url: String, ts: String) {
        self.url = url
        self.ts = ts
    }

    /// `{"url": …, "ts": …, "tags": {}}`.
    public var json: JSON { ["url": .string(url), "ts": .string(ts), "tags": [:]] }
}
