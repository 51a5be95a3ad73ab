import Testing
import Core
import SDKClient

/// Pushwoosh's `devices_filter` language: what parses to which sets, the errors that point at the
/// offending character, and inputs chosen at random that must never crash the parser.
@Suite struct DeviceFilterParserTests {
    static let example = #"A("ABCDE-12345", ["iOS"]) * (T("City", EQ, "Paris") + T("Level", GTE, 10)) \ T("VIP", EQ, true)"#

    @Test func theReferenceExampleParsesLeftToRightWithParenthesesGrouping() throws {
        let parsed = try DeviceFilterParser.parse(Self.example)
        let expected = DeviceFilterSyntax.difference(
            .intersection(
                .app(code: "ABCDE-12345", platforms: ["iOS"], offset: 0),
                .union(.tag(app: nil, condition: ["City", "EQ", "Paris"], offset: 29),
                       .tag(app: nil, condition: ["Level", "GTE", 10], offset: 54))),
            .tag(app: nil, condition: ["VIP", "EQ", true], offset: 77))
        #expect(parsed == expected)
        #expect(parsed.applications == ["ABCDE-12345"])
    }

    @Test func whatClientLibrariesSendParses() throws {
        // Every binary operation in its own parentheses, platform names in upper case, booleans as
        // 1/0 or strings, dates as strings, whitespace anywhere, operators as strings.
        let text = #" ( ( A ( "APP-1" , [ "IOS" , "ANDROID" ] ) * T("Signup", GTE, "2024-01-01 10:00:00") ) \ (AT("APP-1","VIP","EQ",1)) ) "#
        let parsed = try DeviceFilterParser.parse(text)
        guard case .difference(.intersection(.app("APP-1", ["IOS", "ANDROID"], _), .tag(nil, let date, _)), .tag("APP-1", let vip, _)) = parsed
        else {
            Issue.record("unexpected tree \(parsed)")
            return
        }
        #expect(date == ["Signup", "GTE", "2024-01-01 10:00:00"])
        #expect(vip == ["VIP", "EQ", 1])
        #expect(try DeviceFilterParser.parse(#"T("Tags", NOTSET)"#) == .tag(app: nil, condition: ["Tags", "NOTSET"], offset: 0))
        #expect(try DeviceFilterParser.parse(#"T("Score", BETWEEN, [-1.5, 2e3])"#)
                == .tag(app: nil, condition: ["Score", "BETWEEN", [-1.5, 2000.0]], offset: 0))
        #expect(try DeviceFilterParser.parse(#"T("Name", EQ, "say \"hi\" \\ bye")"#)
                == .tag(app: nil, condition: ["Name", "EQ", "say \"hi\" \\ bye"], offset: 0))
    }

    @Test func resolvingChecksPlatformNamesAndConditionsAgainstTheTagTypes() throws {
        let types: [String: TagType] = ["City": .string, "Level": .integer, "VIP": .boolean]
        let filter = try DeviceFilterParser.parse(#"A("APP-1", ["ios", "Android"]) \ T("VIP", EQ, "true")"#)
            .resolve(tagType: { types[$0] }, now: 0)
        #expect(filter == .difference(.app("APP-1", platforms: [1, 3]),
                                      .tag(app: nil, TagCondition(tag: "VIP", type: .boolean, op: .eq, operands: [.number(1)]))))
        let cases: [(String, String)] = [
            (#"A("APP-1", ["Palm"])"#, #"at character 1: unknown platform "Palm""#),
            (#"A("APP-1") * T("Nope", EQ, 1)"#, #"at character 14: tag "Nope" is not defined in this application"#),
            (#"T("City", GTE, 3) + A("APP-1")"#, "at character 1: operator GTE does not apply to tag \"City\" of type string"),
            (#"T("Level", LIKE, 3)"#, #"at character 1: unknown operator "LIKE""#),
        ]
        for (text, prefix) in cases {
            do {
                let filter = try DeviceFilterParser.parse(text).resolve(tagType: { types[$0] }, now: 0)
                Issue.record("\(text) resolved to \(filter)")
            } catch {
                #expect(error.description.hasPrefix(prefix), "\(text): \(error)")
            }
        }
    }

    @Test func syntaxErrorsNameTheCharacterWhereTheyAreFound() {
        let cases: [(String, String)] = [
            ("", "is empty"),
            ("   ", "is empty"),
            (#"A("APP-1") T("x", EQ, 1)"#, #"at character 12 near "T("x", EQ, 1)": expected +, * or \ between two sets"#),
            (#"A("APP-1"#, #"at character 3: a string is not closed with ""#),
            (#"A("APP-1") + "#, "at character 14: expected a set (A, T, AT) or \"(\", but the filter ends"),
            (#"(A("APP-1")"#, "at character 12: expected \")\""),
            (#"B("APP-1")"#, "at character 1: unknown set B; use A, T or AT"),
            (#"G("GROUP-1")"#, "at character 1: G(...) names an application group"),
            (#"T("City" EQ "Paris")"#, #"at character 10 near "EQ "Paris")": expected "," or ")""#),
            (#"T("Level", EQ, 1.2.3)"#, "at character 16: 1.2.3 is not a number"),
            (#"T("Level", EQ, [1, [2]])"#, "at character 20 near \"[2]])\": expected a string in double quotes, a number, true or false"),
            (#"A(["APP-1"])"#, "at character 1: A takes an application code"),
            (#"T("City", "EQ", Paris)"#, "at character 17: expected a value"),
            (String(repeating: "(", count: 40) + #"A("X")"# + String(repeating: ")", count: 40), "at character 33 near \"((((((((A(\"X\")))))))\": parentheses nest deeper than 32"),
            (Array(repeating: #"A("X")"#, count: 101).joined(separator: "+"), "at character 701: has more than 100 sets"),
            (String(repeating: " ", count: DeviceFilterParser.maximumLength + 1), "is longer than 10000 characters"),
        ]
        for (text, prefix) in cases {
            do {
                let parsed = try DeviceFilterParser.parse(text)
                Issue.record("\(text.prefix(60)) parsed as \(parsed)")
            } catch {
                #expect(error.description.hasPrefix(prefix), "\(text.prefix(60)): \(error)")
            }
        }
    }

    /// Random strings over the language's own characters and beyond, and random mutations of valid
    /// filters: each gives a tree or an error with a position inside the text, and never a crash.
    @Test func randomInputNeverCrashesTheParser() {
        var random = SplitMix64(seed: 0x5EED_F11E)
        let alphabet = Array(#"ATGat()[],+*\" 0123456789.-eE_EQINOTSBWLV"# + "\u{0}\n\té🙂\u{301}")
        let valid = [
            Self.example,
            #"((A("APP-1", ["IOS","ANDROID"]) * T("Signup", GTE, "2024-01-01")) \ (AT("APP-1","VIP","EQ",1)))"#,
            #"T("Interests", IN, ["a", "b"]) + T("Level", BETWEEN, [1, 5]) * T("City", NOTSET)"#,
        ]
        var parsed = 0, refused = 0
        func check(_ text: String) {
            do {
                _ = try DeviceFilterParser.parse(text)
                parsed += 1
            } catch {
                refused += 1
                if let position = error.position { #expect(position >= 1 && position <= text.count + 1, "\(text): \(error)") }
            }
        }
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...80, using: &random)
            check(String((0..<length).map { _ in alphabet.randomElement(using: &random)! }))
        }
        for _ in 0..<20_000 {
            var characters = Array(valid.randomElement(using: &random)!)
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let at = Int.random(in: 0...characters.count, using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0: if at < characters.count { characters.remove(at: at) }
                case 1: characters.insert(alphabet.randomElement(using: &random)!, at: at)
                case 2: if at < characters.count { characters[at] = alphabet.randomElement(using: &random)! }
                default:
                    let end = min(characters.count, at + Int.random(in: 1...12, using: &random))
                    characters.insert(contentsOf: characters[at..<end], at: at)
                }
            }
            check(String(characters))
        }
        // Deep nesting and long lists are refused with an error, not a stack overflow.
        check(String(repeating: "(", count: 9_000))
        check("T(\"x\", IN, [" + Array(repeating: "1", count: 1_500).joined(separator: ",") + "])")
        #expect(parsed > 100 && refused > 10_000, "parsed \(parsed), refused \(refused)")
    }
}
