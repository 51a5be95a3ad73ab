import Testing
import Core

/// Text read from request bytes (JSON strings, HTTP heads) is the string `String(decoding:as:)`
/// makes of the same bytes, at every length around the 15 a string holds without a buffer.
@Suite struct UTF8TextTests {
    @Test(arguments: [
        Array("".utf8), Array("a".utf8), Array("hwid-123456789A".utf8), Array("hwid-123456789AB".utf8),
        Array("Größe".utf8), Array("ünïcödé-tëxt-ö".utf8), Array("日本語のテキスト".utf8),
        // Invalid UTF-8: a lone continuation byte, a truncated sequence, an overlong NUL, and a
        // stray lead byte at the 15-byte edge.
        [0x61, 0x80, 0x62], [0x61, 0xE2, 0x82], [0xC0, 0x80], Array("abcdefghijklmn".utf8) + [0xF0],
        Array("abcdefghijklmno".utf8) + [0xF0],
    ])
    func matchesStringDecoding(_ bytes: [UInt8]) {
        let text = bytes.withUnsafeBytes { String(utf8: $0) }
        #expect(text == String(decoding: bytes, as: UTF8.self))
        #expect(Array(text.utf8) == Array(String(decoding: bytes, as: UTF8.self).utf8))
    }

    @Test func everyLengthUpToAndPastTheInlineLimit() {
        for length in 0...40 {
            let bytes = (0..<length).map { UInt8(0x41 + $0 % 26) }
            let text = bytes.withUnsafeBytes { String(utf8: $0) }
            #expect(text.utf8.count == length)
            #expect(Array(text.utf8) == bytes)
        }
    }
}
