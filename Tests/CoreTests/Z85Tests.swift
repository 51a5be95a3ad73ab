import Core
import Testing

struct Z85Tests {
    @Test func theRFCsTestVectorEncodesAndDecodes() throws {
        // ZeroMQ RFC 32's test vector.
        let bytes: [UInt8] = [0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B]
        #expect(Z85.encode(bytes) == "HelloWorld")
        #expect(try Z85.decode("HelloWorld") == bytes)
    }

    @Test func everyGroupRoundTripsUpToTheLargest32BitValue() throws {
        #expect(Z85.encode([0, 0, 0, 0]) == "00000")
        #expect(Z85.encode([0xFF, 0xFF, 0xFF, 0xFF]) == "%nSc0")
        #expect(try Z85.decode("%nSc0") == [0xFF, 0xFF, 0xFF, 0xFF])
        let key = (0..<32).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
        let text = try #require(Z85.encode(key))
        #expect(text.count == 40)
        #expect(try Z85.decode(text) == key)
        #expect(Z85.encode([1, 2, 3]) == nil)
    }

    @Test func aGroupAbove32BitsIsRefused() {
        // `#` and `$` are the alphabet's last two characters (84 and 83): 84 × 85^4 > 2^32 − 1.
        for text in ["%nSc1", "#0000", "$0000", "HelloWorld#0000"] {
            let error = #expect(throws: Z85.Error.self, "\(text)") { try Z85.decode(text) }
            let start = text.count - 4
            #expect(error?.description == "characters \(start)–\(start + 4) stand for more than 2^32 − 1")
        }
    }

    @Test func otherTextIsRefusedSayingWhereNotWhat() throws {
        func problem(_ text: String) -> String? {
            do {
                _ = try Z85.decode(text)
                return nil
            } catch {
                return error.description
            }
        }
        #expect(problem("HelloWorl") == "9 characters, not a multiple of 5")
        for (text, position) in [("Hello Worl", 6), ("Hell~World", 5), ("\"ello", 1), ("Helloé123", 6)] {
            #expect(problem(text) == "character \(position) is not in the Z85 alphabet", "\(text)")
        }
        #expect(try Z85.decode("") == [])
    }
}
