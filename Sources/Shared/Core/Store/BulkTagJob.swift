/// One device's changes in a `bulkSetTags` job (Pushwoosh's Audience API): the device named by
/// hwid, user id (every device of the user) or push token, and its tag updates.
public struct BulkTagEntry: Sendable, Equatable {
    public enum Device: Sendable, Equatable {
        case hwid(String)
        case userID(String)
        case pushToken(String)

        /// The request's field for this kind of reference, and its value.
        public var field: (name: String, value: String) {
            switch self {
            case .hwid(let hwid): return ("hwid", hwid)
            case .userID(let user): return ("user_id", user)
            case .pushToken(let token): return ("push_token", token)
            }
        }
    }

    public let device: Device
    public let updates: [TagUpdate]

    public init(device: Device, updates: [TagUpdate]) {
        self.device = device
        self.updates = updates
    }
}

/// A stored `bulkSetTags` job and its progress. Entries are applied in order, in chunks, each
/// chunk in a transaction that also advances `processed`, so a job resumes where it stopped.
public struct BulkTagJob: Sendable, Equatable {
    public enum Status: String, Sendable {
        case pending = "Pending"
        case processing = "Processing"
        case completed = "Completed"
        case failed = "Failed"
    }

    public let id: String
    public let app: String
    public let status: Status
    public let createMissingTags: Bool
    public let total: Int
    public let processed: Int
    /// Entries that could not be applied (each has a `BulkTagError`).
    public let failed: Int
    /// Why the job failed as a whole (status Failed).
    public let failure: String?
    public let createdAt: Int64
    public let updatedAt: Int64

    public init(id: String, app: String, status: Status, createMissingTags: Bool, total: Int, processed: Int, failed: Int,
                failure: String?, createdAt: Int64, updatedAt: Int64) {
        self.id = id
        self.app = app
        self.status = status
        self.createMissingTags = createMissingTags
        self.total = total
        self.processed = processed
        self.failed = failed
        self.failure = failure
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// Why one entry of a bulkSetTags job was not applied (the entry changed nothing).
public struct BulkTagError: Sendable, Equatable {
    /// The entry's position in the request's `devices` array.
    public let index: Int
    /// `hwid`, `user_id` or `push_token`, and its value.
    public let field: String
    public let value: String
    public let message: String

    public init(index: Int, field: String, value: String, message: String) {
        self.index = index
        self.field = field
        self.value = value
        self.message = message
    }
}

extension BulkTagError {
    /// The message of an error that concerns one entry alone (recorded, the job goes on), or nil for
    /// a failure of the database (the chunk is tried again).
    public static func message(of error: any Error) -> String? {
        switch error {
        case let error as TagError: return error.message
        case StoreError.invalid(let message): return message
        default: return nil
        }
    }
}
