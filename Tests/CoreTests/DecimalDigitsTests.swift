import Testing
import Core

/// Numbers written into byte buffers (JSON, HTTP heads, PostgreSQL parameters) read as Swift spells them.
@Suite struct DecimalDigitsTests {
    @Test func digitsMatchSwiftsSpellingAtEveryLength() {
        var values: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, 1234, -98_765, .max, .min, .max - 1, .min + 1]
        var power: Int64 = 1
        for _ in 0..<18 {
            power *= 10
            values += [power - 1, power, -power]
        }
        for value in values {
            var bytes: [UInt8] = Array("x=".utf8)
            bytes.appendDecimal(value)
            #expect(String(decoding: bytes, as: UTF8.self) == "x=\(value)")
        }
    }
}
