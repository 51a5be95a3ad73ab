import Testing
@testable import Core

@Suite struct JSONTests {
    @Test func keepsIntegersDecimalsAndBooleansApart() throws {
        let json = try JSON.parse(#"{"i": 42, "d": 1.5, "e": 1e3, "b": true, "n": null, "s": "x", "a": [1, "2"]}"#)
        #expect(json["i"] == .int(42))
        #expect(json["d"] == .double(1.5))
        #expect(json["e"] == .double(1000))
        #expect(json["b"] == .bool(true))
        #expect(json["n"] == .null)
        #expect(json["s"] == .string("x"))
        #expect(json["a"] == .array([.int(1), .string("2")]))
    }

    @Test func readsIntegersOfEveryLengthAsSwiftDoes() throws {
        var texts = ["0", "-0", "7", "-7", "9223372036854775807", "-9223372036854775808"]
        for digits in 1...20 {
            let power = "1" + String(repeating: "0", count: digits)
            texts += [String(repeating: "9", count: digits), power, "-" + power]
        }
        for text in texts {
            let expected: JSON = Int64(text).map(JSON.int) ?? .double(Double(text)!)
            #expect(try JSON.parse(text) == expected, "\(text)")
        }
        #expect(try JSON.parse("9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try JSON.parse("[-12, 0.5, -0e1]") == [.int(-12), .double(0.5), .double(-0.0)])
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        let json = try JSON.parse(#""a\"b\\c\n\u00e9\ud83d\ude00/""#)
        #expect(json == .string("a\"b\\c\né😀/"))
    }

    @Test func roundTripsThroughTheEncoder() throws {
        let value: JSON = ["z": [1, 2.5, "é\"\n\u{01}"], "a": ["nested": nil], "b": false]
        let text = value.text
        #expect(text == #"{"a":{"nested":null},"b":false,"z":[1,2.5,"é\"\n\u0001"]}"#)
        #expect(try JSON.parse(text) == value)
    }

    /// Objects of one, two and more members are written in sorted key order, whatever order the
    /// dictionary holds them in (sixteen pairs: a dictionary that happens to hold every pair sorted
    /// is one chance in 65,536).
    @Test func writesEveryObjectInSortedKeyOrder() {
        for index in 0..<16 {
            let low = "k\(index)a", high = "k\(index)b"
            #expect(JSON.object([high: 1, low: 2]).text == #"{"\#(low)":2,"\#(high)":1}"#)
            #expect(JSON.object([low: 2, high: 1]).text == #"{"\#(low)":2,"\#(high)":1}"#)
        }
        #expect(JSON.object(["c": 3, "a": 1, "b": 2]).text == #"{"a":1,"b":2,"c":3}"#)
        #expect(JSON.object(["only": true]).text == #"{"only":true}"#)
    }

    @Test(arguments: ["\"", "\\", "\"a", "a\\", "\n\r\t\u{1f}\u{00}", "ab\"\"cd\\\\", "é😀\u{7f}/", "plain"])
    func escapesAnywhereInAStringRoundTrip(_ value: String) throws {
        let text = JSON.string(value).text
        #expect(!text.utf8.dropFirst().dropLast().contains { $0 < 0x20 })
        #expect(try JSON.parse(text) == .string(value))
    }

    @Test(arguments: ["\"", "\\", "\n", "\u{1}", "\u{1f}", "é", " ", "!", "#", "[", "]", "\u{7f}"])
    func aCharacterIsEscapedAtEveryPositionOfALongString(_ special: String) throws {
        let escaped = ["\"": #"\""#, "\\": #"\\"#, "\n": #"\n"#, "\u{1}": #"\u0001"#, "\u{1f}": #"\u001f"#][special] ?? special
        for position in 0..<20 {
            let value = String(repeating: "a", count: position) + special + String(repeating: "b", count: 19 - position)
            let expected = "\"" + String(repeating: "a", count: position) + escaped + String(repeating: "b", count: 19 - position) + "\""
            #expect(JSON.string(value).text == expected, "at \(position)")
        }
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\" 1}", "tru", "01", "1.", "\"\\x\"", "{} x", "\"\u{01}\"", "\"\\ud800\""])
    func rejectsMalformedInput(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSON.parse(text) }
    }

    @Test func limitsNesting() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONParseError.self) { try JSON.parse(deep) }
        let fine = String(repeating: "[", count: 60) + String(repeating: "]", count: 60)
        #expect((try? JSON.parse(fine)) != nil)
    }

    @Test func lenientAccessorsAcceptTheFormsTheSDKsSend() {
        #expect(JSON.string("10800").lenientInt == 10800)
        #expect(JSON.int(-3600).lenientInt == -3600)
        #expect(JSON.double(2.0).lenientInt == 2)
        #expect(JSON.double(2.5).lenientInt == nil)
        #expect(JSON.string("abc").lenientInt == nil)
        #expect(JSON.string("true").lenientBool == true)
        #expect(JSON.int(0).lenientBool == false)
        #expect(JSON.double(3.25).lenientString == "3.25")
    }

    /// A NUL anywhere is found and named by its path; keys in sorted order, so the first is stable.
    @Test func findsTheFirstNULCharacterByItsPath() throws {
        #expect(try JSON.parse(#"{"hwid": "h", "tags": {"a": [1, "x"], "b": {"c": true}}}"#).nulCharacter == nil)
        let cases: [(String, NULCharacter)] = [
            (#"{"hwid": "h\u0000z"}"#, NULCharacter(field: "hwid", inKey: false)),
            (#"{"tags": {"nm": "a\u0000b", "zz": "\u0000"}}"#, NULCharacter(field: "tags.nm", inKey: false)),
            (#"{"notifications": [{"content": "ok"}, {"content": {"en": "x\u0000"}}]}"#, NULCharacter(field: "notifications[1].content.en", inKey: false)),
            (#"{"tags": {"a\u0000b": 1}}"#, NULCharacter(field: "tags", inKey: true)),
            (#"{"a\u0000": 1}"#, NULCharacter(field: "", inKey: true)),
        ]
        for (text, expected) in cases { #expect(try JSON.parse(text).nulCharacter == expected, "\(text)") }
        #expect(NULCharacter(field: "tags.nm", inKey: false).description == "tags.nm must not contain the NUL character (U+0000)")
        #expect(NULCharacter(field: "tags", inKey: true).description == "the keys of tags must not contain the NUL character (U+0000)")
        #expect(NULCharacter.first(in: ["app_id": "A", "identifier": "t\0k"]) == NULCharacter(field: "identifier", inKey: false))
        #expect(NULCharacter.first(in: ["app_id": "A", "x\0": ""]) == NULCharacter(field: "", inKey: true))
        #expect(NULCharacter.first(in: ["app_id": "A"]) == nil)
    }

    /// The parser says whether a string or key decoded U+0000, the only way one can hold it: an
    /// escaped backslash before `u0000`, or other escapes, do not count, and a raw NUL byte is refused.
    @Test func parsingSaysWhetherTheDocumentHoldsNUL() throws {
        let holding = [#"{"hwid": "h\u0000z"}"#, #"{"tags": {"a\u0000b": 1}}"#, #"["x", ["\u0000"]]"#, #""\u0000""#]
        let clean = [#"{"hwid": "h\\u0000z"}"#, #"{"a": "\u0001\n\t\ud83d\ude00"}"#, #"{"a": 0, "b": [0.0, null]}"#]
        for text in holding + clean {
            var holdsNUL = false
            let value = try JSON.parse(Array(text.utf8), holdsNUL: &holdsNUL)
            #expect(holdsNUL == holding.contains(text), "\(text)")
            #expect((value.nulCharacter != nil) == holdsNUL, "\(text)")
        }
        var holdsNUL = false
        #expect(throws: JSONParseError.self) { try JSON.parse(Array("{\"a\": \"x\u{0}\"}".utf8), holdsNUL: &holdsNUL) }
        // Input without contiguous storage takes the same path.
        let scattered = #"{"a": "\u0000"}"#.utf8.lazy.map { $0 }
        #expect(try JSON.parse(scattered, holdsNUL: &holdsNUL) == .object(["a": .string("\u{0}")]))
        #expect(holdsNUL)
    }

    /// Strings are read eight bytes at a time up to whatever may end them: an escape, the closing
    /// quote or a control character is found at every position, and a control character is
    /// refused at its own offset.
    @Test func readsStringsWhereverTheirEscapesAndEndsFall() throws {
        for length in 0..<26 {
            let plain = String(repeating: "é", count: length % 3) + String(repeating: "a", count: length)
            #expect(try JSON.parse("\"\(plain)\"") == .string(plain))
            for position in 0...length {
                let before = String(repeating: "a", count: position), after = String(repeating: "b", count: length - position)
                #expect(try JSON.parse(#""\#(before)\"\#(after)""#) == .string(before + "\"" + after))
                #expect(try JSON.parse(#""\#(before)\u00e9\#(after)""#) == .string(before + "é" + after))
                let control = Array("[\"\(before)\u{01}\(after)\"]".utf8)
                #expect {
                    try JSON.parse(control)
                } throws: { error in
                    (error as? JSONParseError)?.offset == 2 + position && (error as? JSONParseError)?.reason == "control character in string"
                }
                #expect(throws: JSONParseError.self) { try JSON.parse(Array("\"\(before)".utf8)) }
            }
        }
    }

    @Test func parsingKeepsAnOutermostMembersObjectAndNoticesRepeatedNames() throws {
        let text = #" { "other": {"request": 1}, "request" : {"a": [1, {"b": "}"}], "c": null} , "z": null } "#
        let bytes = Array(text.utf8)
        let parsed = try JSON.parse(bytes, member: "request")
        #expect(parsed.isObject)
        #expect(parsed.located.map { String(decoding: bytes[$0], as: UTF8.self) } == #"{"a": [1, {"b": "}"}], "c": null}"#)
        #expect(parsed.members?.names == ["a", "c"])
        #expect(parsed.members?["a"] == [1, ["b": "}"]])
        #expect(parsed.members?["c"] == .null)
        #expect(parsed.members?["b"] == nil)
        #expect(!parsed.repeatsKey && !parsed.holdsNUL)
        let missing = try JSON.parse(bytes, member: "missing")
        #expect(missing.located == nil && missing.members == nil && missing.isObject)
        let array = try JSON.parse(Array(#"[{"request": {}}]"#.utf8), member: "request")
        #expect(array.located == nil && array.members == nil && !array.isObject)
        #expect(try JSON.parse(Array(#"{"request": [1]}"#.utf8), member: "request").members == nil)
        // The whole document is still checked.
        for bad in [#"{"request": {}, "z": [1,]}"#, #"{"request": {"a": 1}} x"#, #"{"request": {"a" 1}}"#, #"{"request": {"a": 1,}}"#] {
            #expect(throws: JSONParseError.self, "\(bad)") { try JSON.parse(Array(bad.utf8), member: "request") }
        }
        // A repeated name anywhere is noticed; the member holds the last value.
        for repeated in [#"{"request": {"k": 1, "k": 2}}"#, #"{"request": 1, "request": {"k": 2}}"#, #"{"request": {"k": 2}, "x": [{"a": 1, "a": 2}]}"#,
                         #"{"x": 0, "y": 0, "request": {"k": 2}, "y": 1}"#] {
            let parsed = try JSON.parse(Array(repeated.utf8), member: "request")
            #expect(parsed.repeatsKey, "\(repeated)")
            #expect(parsed.members?["k"] == 2, "\(repeated)")
        }
        #expect(try JSON.parse(Array(#"{"request": {"k": 2}, "request": 1}"#.utf8), member: "request").members == nil)
    }

    @Test func membersKeepTheirOrderAndTheLastValueOfARepeatedName() {
        var members = JSONMembers()
        for number in 0..<40 {
            let added = members.set(.int(Int64(number)), for: "name\(number)")
            #expect(added)
        }
        for name in ["name3", "name30"] {
            let added = members.set("again", for: name)
            #expect(!added)
        }
        #expect(members.count == 40)
        #expect(members.names.first == "name0" && members.names.last == "name39")
        #expect(members["name3"] == "again" && members["name30"] == "again" && members["name39"] == 39)
        #expect(members["name40"] == nil)
        #expect(members.dictionary.count == 40)
        #expect(JSONMembers(["a": 1, "b": 2]).dictionary == ["a": 1, "b": 2])
    }
}
