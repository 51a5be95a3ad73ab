import Testing
import Core
import TestSupport
@testable import Ingest

/// What a rich media upload must be, checked from the zip's central directory and local headers, and
/// by unpacking its entries.
@Suite struct RichMediaZipTests {
    typealias Entry = ZipBuilder.Entry
    static let limit = 64 * 1024

    func problem(_ bytes: [UInt8], limit: Int = limit) -> String? {
        do {
            _ = try RichMediaZip.check(bytes, maxBytes: limit)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func aPageWithACommentIsReadEntryByEntry() throws {
        var zip = ZipBuilder.page
        zip.comment = Array("made by a test".utf8)
        let directory = try RichMediaZip.check(zip.bytes, maxBytes: Self.limit)
        #expect(directory.entries.map(\.name) == ["index.html", "img/", "img/a.png"])
        #expect(directory.entries.map(\.uncompressedSize) == [31, 0, 300])
        #expect(directory.entries[1].isDirectory)
    }

    @Test(arguments: [
        ([Entry("page.html", [1])], "index.html is required at the root"),
        ([Entry("site/index.html", [1])], "index.html is required at the root"),
        ([Entry("index.html", [1]), Entry("../evil.sh", [1])], "contains a .. component"),
        ([Entry("index.html", [1]), Entry("img/../../evil", [1])], "contains a .. component"),
        ([Entry("index.html", [1]), Entry("/etc/passwd", [1])], "is an absolute path"),
        ([Entry("index.html", [1]), Entry("C:/x", [1])], "starts with a drive letter"),
        ([Entry("index.html", [1]), Entry("a\\..\\b", [1])], "contains a backslash"),
        ([Entry("index.html", [1]), Entry("Index.HTML", [1])], "appears more than once"),
        ([Entry("index.html", [1]), Entry("a.js", [1], method: 14)], "compression method 14"),
        ([Entry("index.html", [1], flags: 1)], "is encrypted"),
        ([Entry("index.html", [1], declaredSize: 700_000)], "unpacks to 700000 bytes"),
        // Links, which unzippers create and then follow: to a file, and a folder link with a file under it.
        ([Entry("index.html", [1]), Entry("link", Array("/etc/passwd".utf8), externalAttributes: 0o120777 << 16)],
         #"entry "link" is a symbolic link; only regular files and folders are accepted"#),
        ([Entry("index.html", [1]), Entry("img", Array("/etc".utf8), externalAttributes: 0o120755 << 16), Entry("img/passwd", [1])],
         #"entry "img" is a symbolic link"#),
        ([Entry("index.html", [1]), Entry("fifo", [], externalAttributes: 0o010644 << 16)], #"entry "fifo" is a named pipe"#),
        ([Entry("index.html", [1]), Entry("junction", [], externalAttributes: 0x400)], #"entry "junction" is a Windows reparse point"#),
    ])
    func badPagesAreRefusedWithTheReason(_ entries: [Entry], _ reason: String) {
        let found = problem(ZipBuilder(entries).bytes)
        #expect(found?.contains(reason) == true, "\(found ?? "accepted")")
    }

    @Test func damagedArchivesAreRefused() {
        let good = ZipBuilder.page.bytes
        #expect(problem([]) == "the body is empty; send the zip as the request body")
        #expect(problem(Array("not a zip at all, just text that is long enough".utf8))?.contains("no end of central directory") == true)
        #expect(problem(Array(good.prefix(10)))?.contains("too short") == true)
        // Cut before the end record, and a directory pointing past the file.
        #expect(problem(Array(good.dropLast(5)))?.contains("no end of central directory") == true)
        var moved = good
        moved[moved.count - 6] = 0xFF
        #expect(problem(moved)?.contains("outside the file") == true)
        // A damaged directory entry signature.
        var damaged = good
        let directoryStart = Int(ZipDirectory.u32(good, good.count - 6))
        damaged[directoryStart] = 0
        #expect(problem(damaged)?.contains("is damaged") == true)
    }

    /// Streaming unzippers (Android's ZipInputStream) read the local headers, not the directory:
    /// every way they could see another zip than the one checked is refused.
    @Test func localHeadersMustAgreeWithTheDirectory() {
        let html = Entry("index.html", Array("<html></html>".utf8))
        #expect(problem(ZipBuilder([html, Entry("zzzz.js", [1], localName: "../x.js")]).bytes)
            == #"entry "zzzz.js" is named "../x.js" in its local header; both names must be the same"#)
        // A local header the directory does not list: between two listed entries, and after the last.
        #expect(problem(ZipBuilder([html, Entry("../evil.js", [1], listed: false), Entry("a.css", [2])]).bytes)
            == #"41 bytes between entry "index.html" and entry "a.css" belong to no listed entry"#)
        #expect(problem(ZipBuilder([html, Entry("../evil.js", [1], listed: false)]).bytes)
            == #"41 bytes between entry "index.html" and the central directory belong to no listed entry"#)

        let good = ZipBuilder([html, Entry("a.css", [2])]).bytes
        let second = Self.directoryEntries(good)[1]
        // Two directory entries sharing one local header.
        var shared = good
        shared.replaceSubrange((second + 42)..<(second + 46), with: [0, 0, 0, 0])
        #expect(problem(shared) == #"entry "a.css"'s local header overlaps entry "index.html""#)
        // A method, size or CRC that the local header states otherwise.
        var method = good
        method[8] = 8
        #expect(problem(method) == #"entry "index.html" has compression method 8 in its local header and 0 in the central directory"#)
        var size = good
        size[22] ^= 1
        #expect(problem(size) == #"entry "index.html"'s local header gives another CRC or size than the central directory"#)
        var crc = good
        crc[14] ^= 1
        #expect(problem(crc) == #"entry "index.html"'s local header gives another CRC or size than the central directory"#)
        var flags = good
        flags[6] = 8
        #expect(problem(flags) == #"entry "index.html"'s local header and the central directory disagree on encryption or the data descriptor"#)
    }

    /// Deflated entries whose CRC and sizes follow the data (macOS and streaming zip writers) are
    /// read; the descriptor must agree with the directory, and a stored entry cannot have one.
    @Test func dataDescriptorsAreWalkedOver() {
        let html = Array("<html></html>".utf8)
        let streamed = ZipBuilder([Entry("index.html", html, method: 8, descriptor: true),
                                   Entry("a.css", [1, 2, 3], method: 8, descriptor: true)]).bytes
        #expect(problem(streamed) == nil)
        var wrong = streamed
        // The first byte of the descriptor's compressed size.
        wrong[30 + 10 + ZipBuilder.deflate(html).count + 8] ^= 1
        #expect(problem(wrong) == #"entry "index.html"'s data descriptor gives another CRC or size than the central directory"#)
        #expect(problem(ZipBuilder([Entry("index.html", [1], descriptor: true)]).bytes)
            == #"entry "index.html" is stored with a data descriptor, which streaming unzippers cannot read; deflate it"#)
    }

    /// Regular files and folders with Unix modes (as Info-ZIP writes them) are what pages are made of.
    @Test func filesAndFoldersWithUnixModesAreAccepted() {
        let zip = ZipBuilder([Entry("index.html", Array("<html></html>".utf8), method: 8, externalAttributes: 0o100644 << 16),
                              Entry("img/", [], externalAttributes: 0o040755 << 16 | 0x10),
                              Entry("img/a.png", [1, 2, 3], externalAttributes: 0o100600 << 16)])
        #expect(problem(zip.bytes) == nil)
    }

    /// The sizes and CRCs are what unpacking produces, not what the headers say: 4 MiB of zeros
    /// declaring 100 bytes is refused once 101 came out, and every other lie with it.
    @Test func aZipThatLiesAboutItsContentIsRefusedByUnpackingIt() {
        let html = Array("<html><body>Sale!</body></html>".utf8)
        let index = Entry("index.html", html, method: 8)
        let zeros = [UInt8](repeating: 0, count: 4 * 1_048_576)
        #expect(problem(ZipBuilder([index, Entry("blank.bin", zeros, method: 8, declaredSize: 100)]).bytes)
            == #"entry "blank.bin" unpacks to more than the 100 bytes its headers declare (unpacking stopped there)"#)
        // Also with a wrong CRC, and stored: the size is found first.
        #expect(problem(ZipBuilder([index, Entry("blank.bin", zeros, method: 8, declaredSize: 100, declaredCRC: 7)]).bytes)?
            .contains("unpacks to more than the 100 bytes") == true)
        #expect(problem(ZipBuilder([Entry("index.html", html, declaredSize: 10)]).bytes)
            == #"entry "index.html" is stored (not compressed) but declares 31 bytes stored and 10 unpacked"#)
        // Fewer bytes than declared.
        #expect(problem(ZipBuilder([Entry("index.html", html, method: 8, declaredSize: 1000)]).bytes)
            == #"entry "index.html" unpacks to 31 bytes; its headers declare 1000"#)
        // A CRC-32 the data does not have, deflated and stored.
        let crc = ZipBuilder.crc32(html)
        let hex = String(crc, radix: 16)
        #expect(problem(ZipBuilder([Entry("index.html", html, method: 8, declaredCRC: 0x1234_5678)]).bytes)
            == #"entry "index.html" has CRC-32 12345678 in its headers but "# + String(repeating: "0", count: 8 - hex.count) + hex + " once unpacked")
        #expect(problem(ZipBuilder([Entry("index.html", html, declaredCRC: crc ^ 1)]).bytes)?.contains("has CRC-32") == true)
        // A damaged deflate stream: block type 3 does not exist.
        var damaged = ZipBuilder([Entry("index.html", html, method: 8)]).bytes
        damaged[30 + 10] |= 0b110
        #expect(problem(damaged)?.hasPrefix(#"entry "index.html"'s deflated data is damaged (zlib: "#) == true, "\(problem(damaged) ?? "accepted")")
    }

    /// A zip may unpack to at most 100 times its own size (1 MiB always), within 10 × the limit.
    @Test func theCompressionRatioIsBounded() {
        let index = Entry("index.html", Array("<html></html>".utf8), method: 8)
        let limit = 1_048_576
        let twoMiB = ZipBuilder([index, Entry("blank.bin", [UInt8](repeating: 0, count: 2 * 1_048_576), method: 8)]).bytes
        let found = problem(twoMiB, limit: limit)
        #expect(found?.hasPrefix("the zip unpacks to 2097165 bytes, ") == true, "\(found ?? "accepted")")
        #expect(found?.hasSuffix("times its own size; at most 100 times (or 1048576 bytes) are accepted") == true)
        // One MiB of zeros is fine however small its zip.
        let oneMiB = ZipBuilder([index, Entry("blank.bin", [UInt8](repeating: 0, count: 1_048_576 - 13), method: 8)]).bytes
        #expect(problem(oneMiB, limit: limit) == nil)
    }

    /// The offsets of the central directory's entries.
    static func directoryEntries(_ bytes: [UInt8]) -> [Int] {
        let count = Int(ZipDirectory.u16(bytes, bytes.count - 12))
        var offsets = [Int(ZipDirectory.u32(bytes, bytes.count - 6))]
        for _ in 1..<count {
            let last = offsets[offsets.count - 1]
            offsets.append(last + 46 + Int(ZipDirectory.u16(bytes, last + 28)))
        }
        return offsets
    }

    @Test func theSizeLimitCounts() {
        let bytes = ZipBuilder.page.bytes
        #expect(problem(bytes, limit: bytes.count) == nil)
        #expect(problem(bytes, limit: bytes.count - 1)?.contains("at most \(bytes.count - 1) are accepted") == true)
    }

    @Test func sha256MatchesTheStandardVectors() {
        #expect(SHA256.hex([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hex(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
            == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(SHA256.hex([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
            == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func byteRanges() {
        #expect(ByteRange.parse("bytes=0-9", size: 100) == .satisfiable(0...9))
        #expect(ByteRange.parse("bytes=90-", size: 100) == .satisfiable(90...99))
        #expect(ByteRange.parse("bytes=90-500", size: 100) == .satisfiable(90...99))
        #expect(ByteRange.parse("bytes=-10", size: 100) == .satisfiable(90...99))
        #expect(ByteRange.parse("bytes=-500", size: 100) == .satisfiable(0...99))
        #expect(ByteRange.parse("bytes=100-", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=-0", size: 100) == .unsatisfiable)
        #expect(ByteRange.parse("bytes=5-2", size: 100) == .ignored)
        #expect(ByteRange.parse("bytes=0-1,5-6", size: 100) == .ignored)
        #expect(ByteRange.parse("items=0-1", size: 100) == .ignored)
    }
}
