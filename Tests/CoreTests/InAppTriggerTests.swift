import Testing
import Core

/// In-app triggers match postEvent attributes as both SDKs send them (iOS: numbers as strings).
@Suite struct InAppTriggerTests {
    func condition(_ json: JSON) throws -> AttributeCondition { try AttributeCondition(json: json) }

    @Test func numbersCompareAsNumbersWhicheverWayTheyArrive() throws {
        let trigger = InAppTrigger(event: "Purchase", conditions: [try condition(["amount", "GTE", 10]), try condition(["plan", "IN", ["gold", "pro"]])])
        #expect(trigger.matches(["amount": 12, "plan": "gold"]))
        #expect(trigger.matches(["amount": "10", "plan": "pro"]))
        #expect(trigger.matches(["amount": 10.0, "plan": "pro"]))
        #expect(!trigger.matches(["amount": "9.5", "plan": "pro"]))
        #expect(!trigger.matches(["amount": 50, "plan": "free"]))
        #expect(!trigger.matches(["plan": "gold"]))
    }

    @Test func everyOperator() throws {
        let cases: [(JSON, JSON?, Bool)] = [
            (["a", "EQ", "x"], "x", true), (["a", "EQ", "x"], "y", false), (["a", "EQ", 3], "3", true),
            (["a", "EQ", true], .bool(true), true), (["a", "EQ", true], "true", true), (["a", "EQ", true], .bool(false), false),
            (["a", "NOTEQ", "x"], "y", true), (["a", "NOTEQ", "x"], "x", false), (["a", "NOTEQ", "x"], nil, false),
            (["a", "NOTIN", ["x", "y"]], "z", true), (["a", "NOTIN", ["x", "y"]], "y", false),
            (["a", "LTE", 5], 5, true), (["a", "LTE", 5], 6, false), (["a", "LTE", 5], "text", false),
            (["a", "BETWEEN", [1, 3]], 2, true), (["a", "BETWEEN", [1, 3]], "3", true), (["a", "BETWEEN", [1, 3]], 4, false),
            (["a", "ANY"], "anything", true), (["a", "ANY"], nil, false), (["a", "ANY"], .null, false),
            (["a", "NOTSET"], nil, true), (["a", "NOTSET"], .null, true), (["a", "NOTSET"], 1, false),
        ]
        for (json, value, expected) in cases {
            #expect(try condition(json).matches(value) == expected, "\(json.text) on \(value.map(\.text) ?? "missing")")
        }
    }

    @Test func noConditionsMatchAnyAttributes() {
        #expect(InAppTrigger(event: "Open").matches([:]))
    }

    /// Each condition is refused by `read` with a message that holds its reason.
    func expectRefused(_ bad: [(JSON, String)], by read: (JSON) throws(ConditionError) -> AttributeCondition) {
        for (json, reason) in bad {
            do {
                let condition = try read(json)
                Issue.record("\(json.text) was read as \(condition)")
            } catch {
                #expect(error.message.contains(reason), "\(json.text): \(error.message)")
            }
        }
    }

    @Test func badConditionsAreRefusedWithTheReason() {
        let bad: [(JSON, String)] = [
            ("a", "must be [attribute, operator, operand]"), (["", "EQ", 1], "non-empty attribute"),
            (["a", "LIKE", 1], "unknown operator LIKE"), (["a", "EQ", [1]], "EQ takes one string, number or boolean"),
            (["a", "IN", []], "non-empty array"), (["a", "BETWEEN", [1]], "BETWEEN takes [min, max] numbers"),
            (["a", "BETWEEN", ["x", "y"]], "BETWEEN takes [min, max] numbers"),
        ]
        expectRefused(bad) { json throws(ConditionError) in try AttributeCondition(json: json) }
    }

    @Test func conditionsTheAPIIsGivenMustBeAbleToMatch() throws {
        let bad: [(JSON, String)] = [
            (["amount", "GTE", "lots"], "GTE takes one number (or a string holding one), found \"lots\""),
            (["amount", "LTE", true], "LTE takes one number"), (["amount", "GTE", "nan"], "GTE takes one number"),
            (["amount", "BETWEEN", [100, 10]], "min ≤ max, found [100, 10]"), (["amount", "BETWEEN", ["1", "inf"]], "finite numbers"),
            (["plan", "NOTSET", "gold"], "NOTSET takes no operand"), (["plan", "ANY", .null], "ANY takes no operand"),
            (["plan", "IN", []], "non-empty array"), (["plan", "EQ"], "EQ takes one string, number or boolean"),
        ]
        expectRefused(bad) { json throws(ConditionError) in try AttributeCondition(checking: json) }
        // What the API documents stays accepted, and reads as init(json:) reads it.
        let good: [JSON] = [["amount", "GTE", 50], ["amount", "LTE", "9.5"], ["amount", "BETWEEN", [1, 1]], ["plan", "NOTSET"],
                            ["plan", "ANY"], ["plan", "IN", ["gold"]], ["plan", "EQ", "gold"]]
        for json in good { #expect(try AttributeCondition(checking: json) == AttributeCondition(json: json), "\(json.text)") }
        // A condition stored before these rules still reads (it matches nothing, as it did).
        #expect(try !AttributeCondition(json: ["amount", "GTE", "lots"]).matches(5))
    }

    @Test func theStoredFormReadsBackTheSame() throws {
        let trigger = InAppTrigger(event: "E", conditions: [try condition(["a", "IN", ["x", 2, false]]), try condition(["b", "NOTSET"]),
                                                            try condition(["c", "BETWEEN", [1, 2.5]]), try condition(["d", "eq", "v"])])
        #expect(InAppTrigger(event: "E", conditionsText: trigger.conditionsText) == trigger)
        #expect(trigger.json["conditions"]?.arrayValue?[3] == ["d", "EQ", "v"])
    }
}
