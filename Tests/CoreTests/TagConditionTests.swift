import Testing
@testable import Core
import TestSupport

/// Conditions as createMessage sends them, checked against the tag types and normalised.
@Suite struct TagConditionTests {
    func parse(_ json: JSON, index: Int = 0) throws(ConditionError) -> TagCondition { try ConditionFixture.parse(json, index: index) }
    func date(_ text: String) -> Double { Double(TagDate.parse(text) ?? -1) }
    func version(_ text: String) -> Double { Double(TagVersion.encode(text) ?? -1) }


    @Test func validConditionsAreNormalised() throws {
        typealias O = TagCondition.Operand
        let cases: [(JSON, TagType, TagCondition.Operator, [O])] = [
            (["Level", "EQ", 5], .integer, .eq, [.number(5)]),
            (["Level", "NOTEQ", "5"], .integer, .notEq, [.number(5)]),
            (["Level", "GTE", 2.5], .integer, .gte, [.number(2.5)]),
            (["Level", "LTE", " 7 "], .integer, .lte, [.number(7)]),
            (["Level", "IN", [1, "2", 3]], .integer, .inList, [.number(1), .number(2), .number(3)]),
            (["Level", "NOTIN", [4]], .integer, .notIn, [.number(4)]),
            (["Level", "BETWEEN", [1, 1]], .integer, .between, [.number(1), .number(1)]),
            (["Level", "eq", 1], .integer, .eq, [.number(1)]),
            (["Score", "EQ", 1.5], .decimal, .eq, [.number(1.5)]),
            (["Score", "NOTEQ", "0.25"], .decimal, .notEq, [.number(0.25)]),
            (["Score", "GTE", 1], .decimal, .gte, [.number(1)]),
            (["Score", "LTE", -1.5], .decimal, .lte, [.number(-1.5)]),
            (["Score", "IN", [1.5, 2]], .decimal, .inList, [.number(1.5), .number(2)]),
            (["Score", "NOTIN", ["3.5"]], .decimal, .notIn, [.number(3.5)]),
            (["Score", "BETWEEN", [0.5, "2.5"]], .decimal, .between, [.number(0.5), .number(2.5)]),
            (["City", "EQ", "Lyon"], .string, .eq, [.text("Lyon")]),
            (["City", "NOTEQ", 42], .string, .notEq, [.text("42")]),
            (["City", "IN", ["Lyon", "Nice"]], .string, .inList, [.text("Lyon"), .text("Nice")]),
            (["City", "NOTIN", ["Oslo"]], .string, .notIn, [.text("Oslo")]),
            (["Language", "EQ", "fr"], .string, .eq, [.text("fr")]),
            (["Language", "IN", ["fr", "de"]], .string, .inList, [.text("fr"), .text("de")]),
            (["Fav", "IN", ["a", "b"]], .list, .inList, [.text("a"), .text("b")]),
            (["Fav", "IN", "a"], .list, .inList, [.text("a")]),
            (["Fav", "NOTIN", ["c"]], .list, .notIn, [.text("c")]),
            (["Fav", "NOTIN", "c"], .list, .notIn, [.text("c")]),
            (["Fav", "EQ", "a"], .list, .eq, [.text("a")]),
            (["VIP", "EQ", true], .boolean, .eq, [.number(1)]),
            (["VIP", "EQ", 0], .boolean, .eq, [.number(0)]),
            (["VIP", "EQ", "false"], .boolean, .eq, [.number(0)]),
            (["VIP", "EQ", "1"], .boolean, .eq, [.number(1)]),
            // Day operators reduce to the start of the UTC day; instant operators keep the time.
            (["Born", "EQ", "2024-01-05 13:45"], .date, .eq, [.number(date("2024-01-05"))]),
            (["Born", "NOTEQ", "3 days ago"], .date, .notEq, [.number(date("2024-01-29"))]),
            (["Born", "IN", ["2024-01-05", 1_704_500_000]], .date, .inList, [.number(date("2024-01-05")), .number(date("2024-01-06"))]),
            (["Born", "NOTIN", ["1 day ago"]], .date, .notIn, [.number(date("2024-01-31"))]),
            (["Born", "GTE", "2024-01-05 13:45"], .date, .gte, [.number(date("2024-01-05 13:45"))]),
            (["Born", "GTE", "3 days ago"], .date, .gte, [.number(Double(ConditionFixture.now - 3 * 86_400))]),
            (["Born", "LTE", 1_704_462_300], .date, .lte, [.number(1_704_462_300)]),
            (["Born", "LTE", "1704462300"], .date, .lte, [.number(1_704_462_300)]),
            (["Born", "BETWEEN", ["2024-01-01", "0 days ago"]], .date, .between, [.number(date("2024-01-01")), .number(Double(ConditionFixture.now))]),
            (["Build", "EQ", "1.2.3"], .version, .eq, [.number(version("1.2.3"))]),
            (["Build", "NOTEQ", 2], .version, .notEq, [.number(version("2"))]),
            (["Build", "GTE", "1.10"], .version, .gte, [.number(version("1.10"))]),
            (["Build", "LTE", "2.0.0.1"], .version, .lte, [.number(version("2.0.0.1"))]),
            (["Build", "IN", ["1.0", "1.1"]], .version, .inList, [.number(version("1.0")), .number(version("1.1"))]),
            (["Build", "NOTIN", ["3"]], .version, .notIn, [.number(version("3"))]),
            (["Build", "BETWEEN", ["1.9", "1.10"]], .version, .between, [.number(version("1.9")), .number(version("1.10"))]),
        ]
        for (json, type, op, operands) in cases {
            let tag = json.arrayValue?.first?.stringValue ?? ""
            #expect(try parse(json) == TagCondition(tag: tag, type: type, op: op, operands: operands), "\(json.text)")
        }
        for (tag, type) in ConditionFixture.types.merging(["Language": .string], uniquingKeysWith: { a, _ in a }) {
            for op in ["NOTSET", "ANY"] {
                let expected = TagCondition(tag: tag, type: type, op: TagCondition.Operator(rawValue: op) ?? .any, operands: [])
                #expect(try parse([.string(tag), .string(op)]) == expected)
                #expect(try parse([.string(tag), .string(op), "ignored"]) == expected)
            }
        }
    }

    @Test func languageIsBuiltInAndDoesNotAskForATagType() throws {
        var asked: [String] = []
        let condition = try TagCondition.parse(["Language", "NOTEQ", "en"], index: 0, tagType: { asked.append($0); return nil }, now: 0)
        #expect(condition == TagCondition(tag: "Language", type: .string, op: .notEq, operands: [.text("en")]))
        #expect(asked.isEmpty)
        #expect(throws: ConditionError("conditions[0]: tag \"language\" is not defined in this application")) {
            try TagCondition.parse(["language", "EQ", "en"], index: 0, tagType: { _ in nil }, now: 0)
        }
    }

    @Test func invalidConditionsNameTheProblemAndPosition() {
        let dateForms = "(\"YYYY-MM-DD HH:mm\", \"YYYY-MM-DD\", unix seconds or \"N days ago\")"
        let cases: [(JSON, Int, String)] = [
            (["Level", "LIKE", 5], 2, "unknown operator \"LIKE\""),
            (["Level", "EQ", "high"], 0, "tag \"Level\" is integer; operand must be a number"),
            (["Foo", "EQ", 1], 1, "tag \"Foo\" is not defined in this application"),
            ("Level", 0, "a condition must be an array [tag, operator, operand]"),
            (["Level"], 0, "a condition must be an array [tag, operator, operand]"),
            (["Level", "EQ", 1, 2], 0, "a condition must be an array [tag, operator, operand]"),
            ([1, "EQ", 1], 0, "the tag name must be a non-empty string"),
            (["", "EQ", 1], 0, "the tag name must be a non-empty string"),
            (["Level", 5, 1], 0, "the operator must be a string, found number"),
            (["Level", "EQ"], 3, "operator EQ needs an operand"),
            (["Level", "EQ", nil], 0, "tag \"Level\" is integer; operand must be a number"),
            (["Level", "GTE", [1]], 0, "tag \"Level\" is integer; operand must be a number"),
            (["Score", "EQ", "NaN"], 0, "tag \"Score\" is decimal; operand must be a number"),
            (["Level", "IN", 5], 0, "tag \"Level\" is integer; operand must be an array of numbers"),
            (["Level", "IN", [1, "x"]], 0, "tag \"Level\" is integer; operand must be an array of numbers"),
            (["Level", "IN", []], 0, "the operand of IN must not be empty"),
            (.array(["Level", "NOTIN", .array((0...1000).map { JSON.int(Int64($0)) })]), 0,
             "the operand of NOTIN has 1001 items; at most 1000 are allowed"),
            (["Level", "BETWEEN", [5, 1]], 0, "BETWEEN needs min <= max, found [5,1]"),
            (["Level", "BETWEEN", [1]], 0, "tag \"Level\" is integer; operand must be [min, max] with two numbers"),
            (["Level", "BETWEEN", [1, 2, 3]], 0, "tag \"Level\" is integer; operand must be [min, max] with two numbers"),
            (["Level", "BETWEEN", 1], 0, "tag \"Level\" is integer; operand must be [min, max] with two numbers"),
            (["City", "GTE", "a"], 0, "operator GTE does not apply to tag \"City\" of type string"),
            (["City", "LTE", "a"], 0, "operator LTE does not apply to tag \"City\" of type string"),
            (["City", "BETWEEN", ["a", "b"]], 0, "operator BETWEEN does not apply to tag \"City\" of type string"),
            (["Language", "GTE", "en"], 0, "operator GTE does not apply to tag \"Language\" of type string"),
            (["City", "EQ", ["Lyon"]], 0, "tag \"City\" is string; operand must be a string"),
            (["City", "IN", "Lyon"], 0, "tag \"City\" is string; operand must be an array of strings"),
            (["City", "IN", [["Lyon"]]], 0, "tag \"City\" is string; operand must be an array of strings"),
            (["Fav", "NOTEQ", "a"], 0, "operator NOTEQ does not apply to tag \"Fav\" of type list"),
            (["Fav", "GTE", "a"], 0, "operator GTE does not apply to tag \"Fav\" of type list"),
            (["Fav", "LTE", "a"], 0, "operator LTE does not apply to tag \"Fav\" of type list"),
            (["Fav", "BETWEEN", ["a", "b"]], 0, "operator BETWEEN does not apply to tag \"Fav\" of type list"),
            (["Fav", "IN", [["a"]]], 0, "tag \"Fav\" is list; operand must be a string or an array of strings"),
            (["Fav", "EQ", ["a"]], 0, "tag \"Fav\" is list; operand must be a string"),
            (["VIP", "NOTEQ", true], 0, "operator NOTEQ does not apply to tag \"VIP\" of type boolean"),
            (["VIP", "IN", [true]], 0, "operator IN does not apply to tag \"VIP\" of type boolean"),
            (["VIP", "NOTIN", [true]], 0, "operator NOTIN does not apply to tag \"VIP\" of type boolean"),
            (["VIP", "GTE", 1], 0, "operator GTE does not apply to tag \"VIP\" of type boolean"),
            (["VIP", "LTE", 1], 0, "operator LTE does not apply to tag \"VIP\" of type boolean"),
            (["VIP", "BETWEEN", [0, 1]], 0, "operator BETWEEN does not apply to tag \"VIP\" of type boolean"),
            (["VIP", "EQ", 2], 0, "tag \"VIP\" is boolean; operand must be 0, 1, true or false"),
            (["VIP", "EQ", "yes"], 0, "tag \"VIP\" is boolean; operand must be 0, 1, true or false"),
            (["Born", "EQ", "yesterday"], 0, "tag \"Born\" is date; operand must be a date \(dateForms)"),
            (["Born", "EQ", "2024-02-30"], 0, "tag \"Born\" is date; operand must be a date \(dateForms)"),
            (["Born", "GTE", "-3 days ago"], 0, "tag \"Born\" is date; operand must be a date \(dateForms)"),
            (["Born", "LTE", 1.5], 0, "tag \"Born\" is date; operand must be a date \(dateForms)"),
            (["Born", "IN", ["2024-01-01", "soon"]], 0, "tag \"Born\" is date; operand must be an array of dates \(dateForms)"),
            (["Born", "BETWEEN", ["2024-01-02", "2024-01-01"]], 0, "BETWEEN needs min <= max, found [\"2024-01-02\",\"2024-01-01\"]"),
            (["Build", "EQ", "1.2.x"], 0, "tag \"Build\" is version; operand must be a version such as \"1.2.3\""),
            (["Build", "EQ", "1.2.3.4.5"], 0, "tag \"Build\" is version; operand must be a version such as \"1.2.3\""),
            (["Build", "EQ", 1.5], 0, "tag \"Build\" is version; operand must be a version such as \"1.2.3\""),
            (["Build", "EQ", "9999.0"], 0, "tag \"Build\" is version; operand must be a version such as \"1.2.3\""),
            (["Build", "BETWEEN", ["2.0", "1.10"]], 0, "BETWEEN needs min <= max, found [\"2.0\",\"1.10\"]"),
            (["Build", "IN", "1.0"], 0, "tag \"Build\" is version; operand must be an array of versions such as \"1.2.3\""),
        ]
        for (json, index, message) in cases {
            #expect(throws: ConditionError("conditions[\(index)]: \(message)"), "\(json.text)") {
                try parse(json, index: index)
            }
        }
    }
}
