import Foundation
import Testing
import Core

/// Text appended to byte buffers (HTTP answers) is its UTF-8, whatever the string's storage: a
/// literal's, a native string's, or Foundation's.
@Suite struct ByteAppendingTests {
    @Test(arguments: ["", "a", "Content-Type", "application/json; charset=utf-8", "Größe", "日本語のテキスト",
                      String(repeating: "x", count: 15), String(repeating: "y", count: 16)])
    func nativeStringsAppendTheirUTF8(_ text: String) {
        var bytes: [UInt8] = [0x3E]
        bytes.appendUTF8(text)
        #expect(bytes == [0x3E] + Array(text.utf8))
    }

    @Test func bridgedStringsAppendTheirUTF8() {
        // A string made by Foundation may not hold UTF-8 of its own until it is read.
        let text = NSString(string: "Größe-\u{65E5}").appending("-tail")
        var bytes: [UInt8] = []
        bytes.appendUTF8(text)
        #expect(bytes == Array("Größe-日-tail".utf8))
    }

    @Test func literalsAppendTheirBytes() {
        var bytes: [UInt8] = Array("HTTP/1.1 ".utf8)
        bytes.appendUTF8("200 OK\r\n")
        bytes.appendUTF8("")
        #expect(bytes == Array("HTTP/1.1 200 OK\r\n".utf8))
    }
}
