/// Everything a backend stores about devices: the registry, tags and bulkSetTags jobs, Live
/// Activity tokens and the SDK report log. Every write is committed before the method returns; a
/// method that throws has changed nothing. Each concern is a protocol of its own, and a caller takes
/// the narrowest it needs; a backend's device store conforms to all of them.
public protocol DeviceStore: DeviceRegistryStore, TagStore, BulkTagStore, LiveActivityTokenStore, ReportLogStore {}
