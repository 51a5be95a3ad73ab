import Core

/// The tag types and the fixed moment that the tag-condition tests (parsing in Core, SQL in SQLite)
/// parse their conditions against.
package enum ConditionFixture {
    package static let types: [String: TagType] = [
        "Level": .integer, "Score": .decimal, "City": .string, "Fav": .list, "Born": .date, "VIP": .boolean, "Build": .version,
    ]
    /// 2024-02-01 12:00 UTC.
    package static let now: Int64 = 1_706_788_800

    /// One `[tag, operator, operand]` condition at `conditions[index]`, typed by `types`.
    package static func parse(_ json: JSON, index: Int = 0) throws(ConditionError) -> TagCondition {
        try TagCondition.parse(json, index: index, tagType: { types[$0] }, now: now)
    }
}
