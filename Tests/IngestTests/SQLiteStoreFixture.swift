import Core
import Storage
import TestSupport

/// A fresh SQLite database in a temporary folder, opened as Herald opens it (`Storage.open`), with
/// one application `APP-1` whose pushes go to a sink.
final class SQLiteStoreFixture {
    let backend: any StoreBackend
    private let folder: TemporaryDirectory

    init() throws {
        folder = try TemporaryDirectory()
        var configuration = Configuration()
        configuration.database = DatabaseSettings(path: folder.file("h.sqlite"))
        configuration.apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: folder.file("sink.jsonl"))]
        backend = try Storage.open(configuration)
    }

    /// Registers `count` iOS devices and creates a message to all of them, due at `now`.
    func campaign(devices count: Int, now: Int64) throws {
        for index in 0..<count {
            try backend.devices.registerDevice(DeviceRegistration(app: "APP-1", hwid: "H\(index)", pushToken: "tok\(index)", gateway: nil,
                                                                  attributes: DeviceAttributes(platform: 1), tags: []), now: now)
        }
        var spec = MessageSpec(content: ["default": "Hi"])
        spec.schedule = MessageSpec.Schedule(sendAt: now, perDeviceTimezone: false)
        _ = try backend.campaigns.createMessages(app: "APP-1", [NewMessage(spec: spec, transactionID: nil)], now: now)
    }
}

extension Logger {
    /// A logger that prints nothing.
    static let silent = Logger(label: "test", level: .none)
}
