import Testing
@testable import Core

@Suite struct TagRulesTests {
    @Test func firstValueDefinesTheType() {
        #expect(TagRules.inferType(of: 5) == .integer)
        #expect(TagRules.inferType(of: 5.5) == .decimal)
        #expect(TagRules.inferType(of: true) == .boolean)
        #expect(TagRules.inferType(of: ["a"]) == .list)
        #expect(TagRules.inferType(of: "2024-03-01 12:30") == .date)
        #expect(TagRules.inferType(of: "Paris") == .string)
        #expect(TagRules.inferType(of: nil) == nil)
    }

    @Test func valuesConvertToTheDefinedType() {
        #expect(TagRules.convert("42", to: .integer) == .integer(42))
        #expect(TagRules.convert(42, to: .string) == .string("42"))
        #expect(TagRules.convert("1.25", to: .decimal) == .decimal(1.25))
        #expect(TagRules.convert(1, to: .boolean) == .boolean(true))
        #expect(TagRules.convert("false", to: .boolean) == .boolean(false))
        #expect(TagRules.convert("2024-03-01 12:30", to: .date) == .date(1_709_296_200))
        #expect(TagRules.convert(1_709_296_200, to: .date) == .date(1_709_296_200))
        #expect(TagRules.convert("solo", to: .list) == .list(["solo"]))
        #expect(TagRules.convert("2.10.3", to: .version) == .version("2.10.3"))
        #expect(TagRules.convert("abc", to: .integer) == nil)
        #expect(TagRules.convert("maybe", to: .boolean) == nil)
        #expect(TagRules.convert("2024-02-30 10:00", to: .date) == nil)
        #expect(TagRules.convert("1.x", to: .version) == nil)
        #expect(TagRules.convert([1, ["nested"]], to: .list) == nil)
    }

    @Test func incrementAddsToIntegersAndStartsAtZero() throws {
        #expect(try TagRules.apply(.increment(3), name: "n", to: .integer(4), type: .integer) == .integer(7))
        #expect(try TagRules.apply(.increment(-2), name: "n", to: nil, type: nil) == .integer(-2))
        #expect(try TagRules.apply(.increment(0.5), name: "d", to: .decimal(1), type: .decimal) == .decimal(1.5))
        #expect(throws: TagError.self) { try TagRules.apply(.increment(1), name: "s", to: .string("x"), type: .string) }
        #expect(throws: TagError.self) { try TagRules.apply(.increment(1), name: "n", to: .integer(.max), type: .integer) }
    }

    @Test func appendAndRemoveEditLists() throws {
        let appended = try TagRules.apply(.append(["b", "c"]), name: "l", to: .list(["a", "b"]), type: .list)
        #expect(appended == .list(["a", "b", "c"]))
        #expect(try TagRules.apply(.remove(["a", "z"]), name: "l", to: appended, type: .list) == .list(["b", "c"]))
        #expect(throws: TagError.self) { try TagRules.apply(.append(["x"]), name: "i", to: .integer(1), type: .integer) }
    }

    @Test func deleteAndMismatchedSets() throws {
        #expect(try TagRules.apply(.delete, name: "x", to: .integer(1), type: .integer) == nil)
        let error = #expect(throws: TagError.self) { try TagRules.apply(.set("abc"), name: "Level", to: nil, type: .integer) }
        #expect(error?.message.contains("tags.Level") == true)
    }

    @Test func parsesTheSetTagsForms() throws {
        let updates = try TagUpdate.parse([
            "a": 1, "b": nil, "c": ["operation": "increment", "value": 2],
            "d": ["operation": "append", "value": ["x"]], "e": ["operation": "remove", "value": ["y"]],
        ])
        #expect(updates == [
            TagUpdate(name: "a", operation: .set(1)), TagUpdate(name: "b", operation: .delete),
            TagUpdate(name: "c", operation: .increment(2)), TagUpdate(name: "d", operation: .append(["x"])),
            TagUpdate(name: "e", operation: .remove(["y"])),
        ])
        #expect(throws: TagError.self) { try TagUpdate.parse(["a": ["operation": "multiply", "value": 2]]) }
        #expect(throws: TagError.self) { try TagUpdate.parse(["a": ["value": 2]]) }
        #expect(throws: TagError.self) { try TagUpdate.parse(["a": ["operation": "increment", "value": "x"]]) }
        #expect(throws: TagError.self) { try TagUpdate.parse(["": 1]) }
    }

    /// List items key PostgreSQL's index entries: one cap, whichever way an item arrives, with the
    /// tag named; a multi-byte item counts its bytes.
    @Test func listItemsAreAtMostTheirCap() throws {
        let longest = String(repeating: "é", count: TagRules.maxListItemBytes / 2)
        let over = longest + "x"
        #expect(try TagRules.apply(.set([.string(longest)]), name: "l", to: nil, type: nil) == .list([longest]))
        #expect(try TagRules.apply(.append([longest]), name: "l", to: .list(["a"]), type: .list) == .list(["a", longest]))
        for operation: TagUpdate.Operation in [.set(["a", .string(over)]), .set(.string(over)), .append([over])] {
            let error = #expect(throws: TagError.self) { try TagRules.apply(operation, name: "interests", to: nil, type: .list) }
            #expect(error?.message == "tags.interests: list items must be at most 1024 bytes long")
        }
        // A string tag keeps its own, larger limit.
        #expect(try TagRules.apply(.set(.string(over)), name: "s", to: nil, type: .string) == .string(over))
        for value: JSON in [[.string(over)], ["operation": "append", "value": [.string(over)]]] {
            let error = #expect(throws: TagError.self) { try TagUpdate.parse(["interests": value]) }
            #expect(error?.message == "tags.interests: list items must be at most 1024 bytes long")
        }
        // An item stored before the cap (SQLite took any length) can still be removed.
        #expect(try TagUpdate.parse(["interests": ["operation": "remove", "value": .string(over)]])
                == [TagUpdate(name: "interests", operation: .remove([over]))])
        #expect(try TagRules.apply(.remove([over]), name: "interests", to: .list(["a", over]), type: .list) == .list(["a"]))
        #expect(try TagUpdate.parse(["interests": [.string(longest)]]) == [TagUpdate(name: "interests", operation: .set([.string(longest)]))])
    }

    @Test func datesAndVersions() {
        #expect(TagDate.parse("1970-01-01 00:00") == 0)
        #expect(TagDate.format(1_709_296_200) == "2024-03-01 12:30")
        #expect(TagDate.parse("2024-03-01") == 1_709_251_200)
        #expect(TagDate.parse("2024-13-01 00:00") == nil)
        #expect(TagDate.parse("yesterday") == nil)
        #expect(TagVersion.encode("1.2") ?? 0 < TagVersion.encode("1.10") ?? 0)
        #expect(TagVersion.encode("2.0.0") ?? 0 > TagVersion.encode("1.99.99.99") ?? 0)
        #expect(TagVersion.encode("1.2.3.4.5") == nil)
    }
}
