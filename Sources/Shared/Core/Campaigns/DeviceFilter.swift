/// The audience of a `createTargetedMessage`: Pushwoosh's `devices_filter` resolved against one
/// application (tag conditions checked against its tag types). Stored with the message; each store
/// backend compiles it into one SQL boolean expression over a device row, where union is OR,
/// intersection AND and difference AND NOT, so set operations cost no more than conditions.
public indirect enum DeviceFilter: Sendable, Equatable, Codable {
    /// `A("CODE")`: the application's devices, or those of the given platform codes.
    case app(String, platforms: [Int]?)
    /// `T("tag", OP, value)` (any application, `app` nil) or `AT("CODE", "tag", OP, value)`.
    case tag(app: String?, TagCondition)
    case union(DeviceFilter, DeviceFilter)
    case intersection(DeviceFilter, DeviceFilter)
    case difference(DeviceFilter, DeviceFilter)
}
