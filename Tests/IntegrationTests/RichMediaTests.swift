import Foundation
import Testing
import Core
import SDKClient
import TestSupport

/// Rich media pages and in-apps against the real herald-ingest (and a worker for the payloads):
/// uploads checked and stored, downloads as the SDKs make them, pushes whose `rm` leads to the
/// uploaded zip, in-apps listed and triggered by events, and their statistics.
@Suite(.serialized) struct RichMediaTests {
    static let app = HeraldProcesses.appCode
    static let token = HeraldProcesses.apiToken

    /// A page zipped by Python's zipfile (deflated, as page tools write them); returns its bytes and SHA-256.
    static func pythonZip(in folder: String, name: String) throws -> (bytes: [UInt8], sha256: String) {
        let path = folder + "/\(name).zip"
        let script = """
            import hashlib, sys, zipfile
            with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("index.html", "<html><body><h1>%s</h1><img src='img/logo.png'></body></html>" % sys.argv[2])
                z.writestr("img/logo.png", bytes(range(256)) * 40)
                z.writestr("style.css", "h1 { color: red }")
            print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())
            """
        let output = try runTool("/usr/bin/env", ["python3", "-c", script, path, name])
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        return (bytes, output.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    static func put(_ herald: HeraldProcesses, _ path: String, _ body: [UInt8], token: String = token) throws -> (status: Int, body: JSON) {
        let response = try herald.client.request("PUT", path, body: body, headers: [("Authorization", "Token \(token)")])
        return (response.status, (try? JSON.parse(response.body)) ?? .null)
    }

    static func get(_ herald: HeraldProcesses, _ path: String, token: String = token) throws -> (status: Int, body: JSON) {
        let response = try herald.client.request("GET", path, headers: [("Authorization", "Token \(token)")])
        return (response.status, (try? JSON.parse(response.body)) ?? .null)
    }

    static func delete(_ herald: HeraldProcesses, _ path: String) throws -> Int {
        try herald.client.request("DELETE", path, headers: [("Authorization", "Token \(token)")]).status
    }

    /// The path part of an absolute URL Herald handed out (it points at the test's ingest).
    static func path(of url: String) throws -> String {
        let components = try #require(URLComponents(string: url))
        return components.path
    }

    @Test func uploadedPagesAreServedWithETagsRangesAndNewVersions() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        let zip = try Self.pythonZip(in: herald.folder, name: "sale")
        let upload = "/api/v1/apps/\(Self.app)/rich-media/sale"

        #expect(try Self.put(herald, upload, zip.bytes, token: "news-secret").status == 403)
        #expect(try Self.put(herald, "/api/v1/apps/NOAPP-00000/rich-media/sale", zip.bytes).status == 404)
        #expect(try herald.count("SELECT count(*) FROM rich_media_pages") == 0)

        let (status, stored) = try Self.put(herald, upload, zip.bytes)
        #expect(status == 200, "\(stored.text)")
        let url = "http://127.0.0.1:\(herald.httpPort)/rich-media/\(Self.app)/sale.zip"
        #expect(stored["url"] == .string(url))
        #expect(stored["sha256"] == .string(zip.sha256))
        #expect(stored["size"] == .int(Int64(zip.bytes.count)))
        let version = try #require(stored["version"]?.lenientInt)
        #expect(try Self.get(herald, "/api/v1/apps/\(Self.app)/rich-media").body["richMedia"]?.arrayValue?.map { $0["code"] } == ["sale"])
        #expect(try Self.get(herald, "/api/v1/apps/\(Self.app)/rich-media", token: "news-secret").status == 403)
        #expect(try Self.get(herald, "/api/v1/apps/\(HeraldProcesses.otherAppCode)/rich-media", token: "news-secret").body["richMedia"] == [])

        // The download needs no token; the ETag is the SHA-256.
        let file = try Self.path(of: url)
        let download = try herald.client.request("GET", file)
        #expect(download.status == 200)
        #expect(download.body == zip.bytes)
        let etag = "\"\(zip.sha256)\""
        #expect(download.headers["etag"] == etag)
        #expect(download.headers["cache-control"] == "public, no-cache")
        #expect(download.headers["accept-ranges"] == "bytes")
        #expect(download.headers["content-type"] == "application/zip")
        let head = try herald.client.request("HEAD", file)
        #expect(head.status == 200 && head.body.isEmpty && head.headers["etag"] == download.headers["etag"])
        for tag in [etag, "W/\(etag)", "\"other\", \(etag)", "*"] {
            let revalidated = try herald.client.request("GET", file, headers: [("If-None-Match", tag)])
            #expect(revalidated.status == 304, "\(tag)")
            #expect(revalidated.body.isEmpty)
            #expect(revalidated.headers["etag"] == etag)
        }
        #expect(try herald.client.request("GET", file, headers: [("If-None-Match", "\"stale\"")]).body == zip.bytes)

        let size = zip.bytes.count
        let first = try herald.client.request("GET", file, headers: [("Range", "bytes=0-99")])
        #expect(first.status == 206)
        #expect(first.body == Array(zip.bytes[0..<100]))
        #expect(first.headers["content-range"] == "bytes 0-99/\(size)")
        let tail = try herald.client.request("GET", file, headers: [("Range", "bytes=-22")])
        #expect(tail.status == 206)
        #expect(tail.body == Array(zip.bytes[(size - 22)...]))
        let rest = try herald.client.request("GET", file, headers: [("Range", "bytes=100-")])
        #expect(rest.body == Array(zip.bytes[100...]))
        #expect(rest.headers["content-range"] == "bytes 100-\(size - 1)/\(size)")
        let outside = try herald.client.request("GET", file, headers: [("Range", "bytes=\(size)-")])
        #expect(outside.status == 416)
        #expect(outside.headers["content-range"] == "bytes */\(size)")
        #expect(try herald.client.request("GET", "/rich-media/\(Self.app)/missing.zip").status == 404)
        #expect(try herald.client.request("GET", "/rich-media/NOAPP-00000/sale.zip").status == 404)

        // A new upload: a new version and ETag at the same address.
        let second = try Self.pythonZip(in: herald.folder, name: "sale2")
        let replaced = try Self.put(herald, upload, second.bytes).body
        #expect(try #require(replaced["version"]?.lenientInt) > version)
        let fresh = try herald.client.request("GET", file, headers: [("If-None-Match", etag)])
        #expect(fresh.status == 200)
        #expect(fresh.body == second.bytes)
        #expect(fresh.headers["etag"] == "\"\(second.sha256)\"")

        #expect(try Self.delete(herald, upload) == 200)
        #expect(try Self.delete(herald, upload) == 404)
        #expect(try herald.client.request("GET", file).status == 404)
    }

    @Test func everyBadZipIsRefusedWithItsReasonAndStoresNothing() throws {
        let herald = try HeraldProcesses()
        let limit = 8192
        let config = try herald.writeConfig("small.json") { $0["rich_media"] = ["max_zip_bytes": .int(Int64(limit))] }
        try herald.startIngest(config: config)
        let upload = "/api/v1/apps/\(Self.app)/rich-media/page"
        let good = ZipBuilder.page.bytes
        #expect(try Self.put(herald, upload, good).status == 200)
        let stored = try #require(try herald.query("SELECT sha256 FROM rich_media_pages", columns: 1).first?.first ?? nil)

        typealias Entry = ZipBuilder.Entry
        let html = Entry("index.html", Array("<html></html>".utf8))
        let bad: [(String, [UInt8], String)] = [
            ("not a zip", Array("<html>just a page, not zipped</html>".utf8), "no end of central directory"),
            ("empty", [], "the body is empty"),
            ("no index.html", ZipBuilder([Entry("main.html", [1])]).bytes, "index.html is required at the root"),
            ("index.html in a folder", ZipBuilder([Entry("page/index.html", [1])]).bytes, "index.html is required at the root"),
            ("traversal", ZipBuilder([html, Entry("../../etc/cron.d/x", [1])]).bytes, "contains a .. component"),
            ("absolute", ZipBuilder([html, Entry("/tmp/x", [1])]).bytes, "is an absolute path"),
            ("backslash", ZipBuilder([html, Entry("..\\x", [1])]).bytes, "contains a backslash"),
            ("duplicate", ZipBuilder([html, Entry("a.css", [1]), Entry("a.css", [2])]).bytes, "appears more than once"),
            ("truncated", Array(good.dropLast(30)), "no end of central directory"),
            ("zip bomb", ZipBuilder([Entry("index.html", [1], declaredSize: UInt32(limit * 10 + 1))]).bytes, "unpacks to"),
            // What Android's ZipInputStream reads are the local headers: they must be the directory's entries.
            ("local name differs", ZipBuilder([html, Entry("zzzz.js", [1], localName: "../x.js")]).bytes,
             #"entry "zzzz.js" is named "../x.js" in its local header"#),
            ("unlisted local entry", ZipBuilder([html, Entry("../x.js", [1], listed: false), Entry("a.css", [1])]).bytes,
             #"between entry "index.html" and entry "a.css" belong to no listed entry"#),
            ("python, local name patched", try Self.pythonPatchedZip(in: herald.folder), #"entry "zzzz.js" is named "../x.js" in its local header"#),
        ]
        for (shape, bytes, reason) in bad {
            let (status, body) = try Self.put(herald, upload, bytes)
            #expect(status == 400, "\(shape)")
            let message = body["error"]?.stringValue ?? ""
            #expect(message.contains(reason) && message.hasPrefix("rich media page refused"), "\(shape): \(message)")
        }
        // Over rich_media.max_zip_bytes: 413 before the body is read.
        let large = ZipBuilder([html, Entry("big.bin", [UInt8](repeating: 7, count: limit))]).bytes
        let (status, body) = try Self.put(herald, upload, large)
        #expect(status == 413)
        #expect(body["status_message"] == .string("request body exceeds the limit of \(limit) bytes"), "\(body.text)")
        #expect(try Self.put(herald, "/api/v1/apps/\(Self.app)/rich-media/bad%20code", good).status == 404)
        #expect(try Self.put(herald, "/api/v1/apps/\(Self.app)/rich-media/other", ZipBuilder([Entry("a", [1])]).bytes).status == 400)

        // Only the first, good upload is stored, unchanged.
        #expect(try herald.count("SELECT count(*) FROM rich_media_pages") == 1)
        #expect(try herald.query("SELECT sha256 FROM rich_media_pages", columns: 1).first?.first == stored)
        #expect(try herald.client.request("GET", "/rich-media/\(Self.app)/page.zip").body == good)

        // A zip written by a streaming writer (CRC and sizes in data descriptors after each entry) is fine.
        let streamed = try Self.pythonStreamedZip(in: herald.folder)
        #expect(try Self.put(herald, "/api/v1/apps/\(Self.app)/rich-media/streamed", streamed).status == 200)
        #expect(try herald.client.request("GET", "/rich-media/\(Self.app)/streamed.zip").body == streamed)
    }

    /// What hostile zips try beyond their names: a gigabyte of zeros declaring 100 bytes (with its
    /// CRC or a wrong one), a whole zip unpacking to far more than 100 times its size, and links
    /// (to a file, and a folder link with a file under it) as `zip --symlinks` stores them. Each is
    /// refused with the reason, and the page stored earlier under the code stays as it was.
    @Test func zipsThatLieAboutTheirSizeOrHoldLinksAreRefusedAndStoreNothing() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        let upload = "/api/v1/apps/\(Self.app)/rich-media/page"
        let good = try Self.pythonZip(in: herald.folder, name: "page")
        #expect(try Self.put(herald, upload, good.bytes).status == 200)

        let bad: [(String, [UInt8], String)] = [
            ("1 GiB declaring 100 bytes", try Self.pythonBomb(in: herald.folder, crc: "kept", declared: 100),
             #"entry "zeros.bin" unpacks to more than the 100 bytes its headers declare"#),
            ("1 GiB declaring 100 bytes, wrong CRC", try Self.pythonBomb(in: herald.folder, crc: "wrong", declared: 100),
             #"entry "zeros.bin" unpacks to more than the 100 bytes its headers declare"#),
            ("40 MiB declared honestly", try Self.pythonBomb(in: herald.folder, crc: "kept", declared: nil, mebibytes: 40),
             "times its own size; at most 100 times (or 1048576 bytes) are accepted"),
            ("link to a file", try Self.pythonLinks(in: herald.folder, [("link", "/etc/passwd")]),
             #"entry "link" is a symbolic link; only regular files and folders are accepted"#),
            ("folder link and a file under it", try Self.pythonLinks(in: herald.folder, [("img", "/etc"), ("img/passwd", nil)]),
             #"entry "img" is a symbolic link"#),
        ]
        for (shape, bytes, reason) in bad {
            let (status, body) = try Self.put(herald, upload, bytes)
            let message = body["error"]?.stringValue ?? ""
            #expect(status == 400 && message.contains(reason), "\(shape): \(status) \(message)")
        }
        #expect(try herald.count("SELECT count(*) FROM rich_media_pages") == 1)
        #expect(try herald.client.request("GET", "/rich-media/\(Self.app)/page.zip").body == good.bytes)
        #expect(try Self.get(herald, "/api/v1/apps/\(Self.app)/rich-media/page").body["sha256"] == .string(good.sha256))
    }

    /// Python's zipfile writes `index.html` and `zeros.bin`, `mebibytes` of zeros deflated (1 GiB
    /// is about 1 MB); then `zeros.bin`'s uncompressed size in both headers is patched to
    /// `declared`, and with `crc` "wrong" its CRC-32 too.
    static func pythonBomb(in folder: String, crc: String, declared: Int?, mebibytes: Int = 1024) throws -> [UInt8] {
        let path = folder + "/bomb.zip"
        let script = """
            import struct, sys, zipfile
            path, crc, declared, mebibytes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
            with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("index.html", "<html><body>Sale!</body></html>")
                with z.open("zeros.bin", "w") as entry:
                    for _ in range(mebibytes):
                        entry.write(bytes(1 << 20))
            data = bytearray(open(path, "rb").read())
            def patch(at):  # the CRC-32, compressed and uncompressed sizes start at `at`
                if crc == "wrong":
                    data[at:at + 4] = struct.pack("<I", 0x12345678)
                if declared >= 0:
                    data[at + 8:at + 12] = struct.pack("<I", declared)
            patch(zipfile.ZipFile(path).getinfo("zeros.bin").header_offset + 14)
            entry = struct.unpack("<I", data[-6:-2])[0]
            while data[entry:entry + 4] == b"PK\\x01\\x02":
                name_length, extra, comment = struct.unpack("<HHH", data[entry + 28:entry + 34])
                if data[entry + 46:entry + 46 + name_length] == b"zeros.bin":
                    patch(entry + 16)
                entry += 46 + name_length + extra + comment
            open(path, "wb").write(data)
            """
        _ = try runTool("/usr/bin/env", ["python3", "-c", script, path, crc, String(declared ?? -1), String(mebibytes)], timeout: 120)
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// A page with symbolic links as Info-ZIP's `zip --symlinks` stores them: made by Unix, mode
    /// 0120777, the target as the data. `entries` are (name, link target), nil for a regular file.
    static func pythonLinks(in folder: String, _ entries: [(String, String?)]) throws -> [UInt8] {
        let path = folder + "/links.zip"
        let script = """
            import sys, zipfile
            with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("index.html", "<html><body>Hi</body></html>")
                for pair in sys.argv[2:]:
                    name, _, target = pair.partition("=")
                    info = zipfile.ZipInfo(name)
                    info.create_system = 3
                    info.external_attr = (0o120777 if target else 0o100644) << 16
                    z.writestr(info, target or "regular file")
            """
        let pairs = entries.map { "\($0.0)=\($0.1 ?? "")" }
        _ = try runTool("/usr/bin/env", ["python3", "-c", script, path] + pairs)
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// Python's zipfile writes `index.html` and `zzzz.js`; then the local header's name of the
    /// second is patched to `../x.js`, leaving the central directory's `zzzz.js`.
    static func pythonPatchedZip(in folder: String) throws -> [UInt8] {
        let path = folder + "/patched.zip"
        let script = """
            import sys, zipfile
            with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("index.html", "<html><body>Hi</body></html>")
                z.writestr("zzzz.js", "alert(1)")
            data = open(sys.argv[1], "rb").read()
            open(sys.argv[1], "wb").write(data.replace(b"zzzz.js", b"../x.js", 1))
            """
        _ = try runTool("/usr/bin/env", ["python3", "-c", script, path])
        return try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// A page Python's zipfile writes to a stream it cannot seek in: flag bit 3, data descriptors.
    static func pythonStreamedZip(in folder: String) throws -> [UInt8] {
        let path = folder + "/streamed.zip"
        let script = """
            import io, sys, zipfile
            class Stream(io.RawIOBase):
                def __init__(self, file): self.file = file
                def writable(self): return True
                def seekable(self): return False
                def write(self, data): return self.file.write(data)
            with open(sys.argv[1], "wb") as file, zipfile.ZipFile(Stream(file), "w", zipfile.ZIP_DEFLATED) as z:
                z.writestr("index.html", "<html><body>Streamed</body></html>")
                z.writestr("img/logo.png", bytes(range(256)) * 8)
            """
        _ = try runTool("/usr/bin/env", ["python3", "-c", script, path])
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes[6] & 8 == 8, "Python wrote no data descriptor")
        return bytes
    }

    @Test func aCampaignWithRichMediaCarriesRmThatDownloadsTheZip() throws {
        let rig = try DeliveryRig()
        let herald = rig.herald
        let zip = try Self.pythonZip(in: herald.folder, name: "promo")
        let version = try #require(try Self.put(herald, "/api/v1/apps/\(Self.app)/rich-media/promo", zip.bytes).body["version"]?.lenientInt)
        let iosToken = deviceToken("", seed: "rm-ios"), androidToken = deviceToken("", seed: "rm-android")
        try rig.register("rm-ios", platform: 1, token: iosToken)
        try rig.register("rm-android", platform: 3, token: androidToken)

        // An unknown code is refused naming the field, and nothing is created.
        let (_, unknown) = try herald.createMessage([["send_date": "now", "content": "Look", "rich_media": "nope"]])
        #expect(unknown["status_code"] == 210)
        #expect(unknown["status_message"]?.stringValue?.hasPrefix("notifications[0].rich_media: rich media nope not found") == true)
        #expect(try herald.messageCount() == 0)

        let (_, funnel) = try rig.sendAndWait(["send_date": "now", "content": "Look", "rich_media": "promo"])
        #expect(funnel["sent"] == 2, "\(funnel.text)")
        let url = "http://127.0.0.1:\(herald.httpPort)/rich-media/\(Self.app)/promo.zip"
        let expected: JSON = ["url": .string(url), "ts": .string(String(version)), "tags": [:]]
        let apns = try #require(try rig.apns.records(token: iosToken).first)
        #expect(apns["payload"]?["rm"] == expected, "\(apns.text)")
        let fcm = try #require(try rig.fcm.records(token: androidToken).first)
        let rmText = try #require(fcm["message"]?["data"]?["rm"]?.stringValue, "\(fcm.text)")
        #expect(try JSON.parse(rmText) == expected)

        // What a device does with it: download the zip from the URL in the payload.
        let download = try herald.client.request("GET", try Self.path(of: url))
        #expect(download.status == 200)
        #expect(download.body == zip.bytes)
    }

    @Test func inAppsAreListedTriggeredByEventsAndCounted() throws {
        let herald = try HeraldProcesses()
        try herald.startIngest()
        let zip = try Self.pythonZip(in: herald.folder, name: "welcome")
        let page = try Self.put(herald, "/api/v1/apps/\(Self.app)/rich-media/welcome", zip.bytes).body
        let version = try #require(page["version"]?.lenientInt)
        let inApps = "/api/v1/apps/\(Self.app)/in-apps"
        func putInApp(_ code: String, _ body: JSON) throws -> (status: Int, body: JSON) {
            try Self.put(herald, "\(inApps)/\(code)", body.encoded())
        }

        // Bad bodies are refused naming the field; a missing page is a conflict; nothing is stored.
        #expect(try putInApp("bad", ["layout": "sideways", "rich_media": "welcome"]).body["error"]?.stringValue?.contains("layout must be one of") == true)
        #expect(try putInApp("bad", ["rich_media": "welcome", "triggers": [["event": "Buy", "conditions": [["amount", "LIKE", 1]]]]])
            .body["error"]?.stringValue?.contains("triggers[0].conditions[0] unknown operator LIKE") == true)
        #expect(try putInApp("bad", ["rich_media": "missing"]).status == 409)
        // A misspelt key is refused, not ignored: `condition` would have made the trigger unconditional.
        let refused: [(JSON, String)] = [
            (["rich_media": "welcome", "triggers": [["event": "Purchase", "condition": [["amount", "GTE", 100]]]]],
             "unknown key triggers[0].condition; a trigger has event and conditions"),
            (["rich_media": "welcome", "priorty": 5], "unknown key priorty; an in-app has rich_media, layout"),
            (["rich_media": "welcome", "closeButtonType": 1], "unknown key closeButtonType"),
            // Conditions that could never match.
            (["rich_media": "welcome", "triggers": [["event": "Purchase", "conditions": [["amount", "GTE", "lots"]]]]],
             "triggers[0].conditions[0] GTE takes one number"),
            (["rich_media": "welcome", "triggers": [["event": "Purchase", "conditions": [["amount", "BETWEEN", [100, 10]]]]]],
             "triggers[0].conditions[0] BETWEEN takes [min, max] with min ≤ max"),
            (["rich_media": "welcome", "triggers": [["event": "Purchase", "conditions": [["plan", "NOTIN", []]]]]],
             "triggers[0].conditions[0] NOTIN takes a non-empty array"),
            (["rich_media": "welcome", "triggers": [["event": "Purchase", "conditions": [["plan", "NOTSET", "x"]]]]],
             "triggers[0].conditions[0] NOTSET takes no operand"),
        ]
        for (body, reason) in refused {
            let (status, answer) = try putInApp("bad", body)
            #expect(status == 400 && answer["error"]?.stringValue?.hasPrefix("in-app bad refused: \(reason)") == true, "\(status) \(answer.text)")
        }
        #expect(try herald.count("SELECT count(*) FROM in_apps") == 0)

        let (status, created) = try putInApp("buy-more", [
            "rich_media": "welcome", "layout": "centerbox", "close_button_type": 1, "priority": 10, "required": true,
            "triggers": [["event": "Purchase", "conditions": [["amount", "GTE", 50], ["currency", "IN", ["EUR", "USD"]]]]],
        ])
        #expect(status == 200, "\(created.text)")
        #expect(try putInApp("hello", ["rich_media": "welcome", "triggers": [["event": "Purchase"], ["event": "Login"]]]).status == 200)

        // getInApps: the SDK's shape, highest priority first.
        let hwid = "inapp-device"
        try herald.ok("registerDevice", ["application": .string(Self.app), "hwid": .string(hwid), "device_type": 1, "push_token": "abc123"])
        let listed = try #require(try herald.ok("getInApps", ["application": .string(Self.app), "hwid": .string(hwid), "language": "en"])["inApps"]?.arrayValue)
        let url = "http://127.0.0.1:\(herald.httpPort)/rich-media/\(Self.app)/welcome.zip"
        #expect(listed.count == 2)
        #expect(listed.first == [
            "code": "buy-more", "url": .string(url), "updated": .int(version), "closeButtonType": 1, "presentationStyleKey": "centerbox",
            "tags": [:], "priority": 10, "required": true,
        ])
        #expect(listed.last?["code"] == "hello" && listed.last?["presentationStyleKey"] == "fullscreen")

        // postEvent answers with the in-app its event triggers; iOS sends numbers as strings.
        func postEvent(_ name: String, _ attributes: JSON) throws -> JSON {
            try herald.ok("postEvent", ["application": .string(Self.app), "hwid": .string(hwid), "event": .string(name),
                                        "attributes": attributes, "timestampUTC": .int(unixNow()), "device_type": 1])
        }
        let richmedia: JSON = ["url": .string(url), "ts": .string(String(version)), "tags": [:]]
        #expect(try postEvent("Purchase", ["amount": "75", "currency": "EUR"]) == ["code": "buy-more", "richmedia": richmedia, "required": true])
        #expect(try postEvent("Purchase", ["amount": 20, "currency": "EUR"]) == ["code": "hello", "richmedia": richmedia, "required": false])
        #expect(try postEvent("Login", [:])["code"] == "hello")
        #expect(try postEvent("Search", ["q": "shoes"]) == [:])

        // What the SDK reports when it shows the in-app and the user taps in it.
        let report: [String: JSON] = ["application": .string(Self.app), "hwid": .string(hwid), "device_type": 1]
        for _ in 0..<2 {
            try herald.ok("triggerInAppAction", .object(report.merging(["action": "show", "code": "buy-more", "richMediaCode": "welcome"]) { $1 }))
        }
        try herald.ok("richMediaAction", .object(report.merging(["inapp_code": "buy-more", "rich_media_code": "welcome", "action_type": 1]) { $1 }))
        try herald.ok("richMediaAction", .object(report.merging(["rich_media_code": "welcome", "action_type": 2]) { $1 }))
        try herald.ok("triggerInAppAction", .object(report.merging(["action": "show", "code": "unknown-inapp"]) { $1 }))
        let statistics = try #require(try Self.get(herald, inApps).body["inApps"]?.arrayValue)
        #expect(statistics.first { $0["code"] == "buy-more" }?["statistics"] == ["shown": 2, "actions": 1])
        #expect(statistics.first { $0["code"] == "hello" }?["statistics"] == ["shown": 0, "actions": 0])
        #expect(try Self.get(herald, "\(inApps)/buy-more").body["triggers"]?.arrayValue?.first?["conditions"]
            == [["amount", "GTE", 50], ["currency", "IN", ["EUR", "USD"]]])
        #expect(try Self.get(herald, "/api/v1/apps/\(Self.app)/rich-media/welcome").body["statistics"] == ["actions": 2])
        #expect(try Self.get(herald, inApps, token: "news-secret").status == 403)
        // The dashboard shows the same figures, as headless Chromium renders it.
        let browser = try DashboardTests.signIn(port: herald.httpPort, app: Self.app, token: Self.token, folder: herald.folder)
        #expect(browser["signed_in"]?["status"] == 200)
        let dashboard = browser["signed_in"]?["dom"]?.stringValue ?? ""
        #expect(dashboard.contains("<h2>In-apps</h2>"))
        #expect(dashboard.contains("<td>buy-more</td><td>welcome</td><td>centerbox</td><td>Purchase</td><td class=\"n\">10</td><td class=\"n\">2</td><td class=\"n\">1</td><td class=\"n\">50.0%</td>"),
                "\(dashboard)")
        #expect(dashboard.contains("<td>welcome</td><td class=\"n\">\(version)</td><td class=\"n\">\(zip.bytes.count)</td>"))

        // A page in use stays until its in-apps go.
        #expect(try Self.delete(herald, "/api/v1/apps/\(Self.app)/rich-media/welcome") == 409)
        #expect(try Self.delete(herald, "\(inApps)/buy-more") == 200)
        #expect(try postEvent("Purchase", ["amount": 75, "currency": "EUR"])["code"] == "hello")
    }

    /// A triggerInAppAction whose count cannot be written (a trigger refuses it) is answered 500
    /// and leaves no report, on either backend, so the SDK's retry is kept and counted once.
    @Test(arguments: TestDatabase.tested) func aReportIsKeptOnlyWithItsCount(_ database: TestDatabase) throws {
        let herald = try HeraldProcesses(database: database)
        try herald.startIngest()
        #expect(try Self.put(herald, "/api/v1/apps/\(Self.app)/rich-media/page", ZipBuilder.page.bytes).status == 200)
        #expect(try Self.put(herald, "/api/v1/apps/\(Self.app)/in-apps/offer", Array(#"{"rich_media": "page"}"#.utf8)).status == 200)
        try herald.ok("registerDevice", ["application": .string(Self.app), "hwid": "shown-device", "device_type": 1, "push_token": "abc123"])
        let shown: JSON = ["application": .string(Self.app), "hwid": "shown-device", "action": "show", "code": "offer"]
        let reports = "SELECT count(*) FROM reports WHERE name = 'triggerInAppAction'"

        try herald.execute(
            sqlite: "CREATE TRIGGER refuse_count BEFORE UPDATE OF shown ON in_apps BEGIN SELECT RAISE(ABORT, 'count refused'); END",
            postgres: """
                CREATE FUNCTION refuse_count() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'count refused'; END $$;
                CREATE TRIGGER refuse_count BEFORE UPDATE OF shown ON in_apps FOR EACH ROW EXECUTE FUNCTION refuse_count();
                """)
        let (status, body) = try herald.call("triggerInAppAction", shown)
        #expect(status == 500 && body["status_code"] == 500, "\(status) \(body.text)")
        #expect(try herald.count(reports) == 0)

        try herald.execute(sqlite: "DROP TRIGGER refuse_count", postgres: "DROP TRIGGER refuse_count ON in_apps")
        try herald.ok("triggerInAppAction", shown)
        #expect(try herald.count(reports) == 1)
        #expect(try Self.get(herald, "/api/v1/apps/\(Self.app)/in-apps/offer").body["statistics"] == ["shown": 1, "actions": 0])
    }

    @Test func withoutPublicURLRichMediaIsRefusedWithWhatToSet() throws {
        let herald = try HeraldProcesses()
        let config = try herald.writeConfig("no-public-url.json") { config in
            if case .object(var http)? = config["http"] {
                http["public_url"] = nil
                config["http"] = .object(http)
            }
        }
        try herald.startIngest(config: config)
        let stored = try Self.put(herald, "/api/v1/apps/\(Self.app)/rich-media/page", ZipBuilder.page.bytes)
        #expect(stored.status == 200)
        #expect(stored.body["url"] == .null)
        let (_, body) = try herald.createMessage([["send_date": "now", "content": "Look", "rich_media": "page"]])
        #expect(body["status_code"] == 210)
        #expect(body["status_message"]?.stringValue?.contains("notifications[0].rich_media: rich media needs http.public_url") == true)
        #expect(try herald.messageCount() == 0)
        let inApp = try Self.put(herald, "/api/v1/apps/\(Self.app)/in-apps/x", Array(#"{"rich_media": "page"}"#.utf8))
        #expect(inApp.status == 409)
        #expect(inApp.body["error"]?.stringValue?.contains("http.public_url") == true)
    }
}
