/// The rules a rich media upload must meet before anything is stored: a readable zip within the
/// size limit, with `index.html` at its root, no entry that could be written outside the folder
/// the SDK unpacks it into (absolute paths, drive letters, backslashes, `..`), no two entries with
/// the same name (compared without case: iOS file systems ignore it), and at most `maxBytes` × 10
/// bytes once unpacked; and local headers that agree with the central directory, one after the
/// other with nothing unlisted between them (`ZipDirectory.walk`).
enum RichMediaZip {
    static let unpackedRatio = 10

    /// The zip's entries, or the first rule it breaks.
    static func check(_ bytes: [UInt8], maxBytes: Int) throws(ZipProblem) -> ZipDirectory {
        guard !bytes.isEmpty else { throw ZipProblem("the body is empty; send the zip as the request body") }
        guard bytes.count <= maxBytes else { throw ZipProblem("the zip is \(bytes.count) bytes; at most \(maxBytes) are accepted (rich_media.max_zip_bytes)") }
        let directory = try ZipDirectory(bytes)
        var seen: Set<String> = []
        var unpacked = 0
        for entry in directory.entries {
            let quoted = entry.quotedName
            if let problem = pathProblem(entry.name) { throw ZipProblem("entry \(quoted) \(problem)") }
            guard seen.insert(entry.name.lowercased()).inserted else { throw ZipProblem("entry \(quoted) appears more than once") }
            unpacked += entry.uncompressedSize
        }
        guard unpacked <= maxBytes * unpackedRatio else {
            throw ZipProblem("the zip unpacks to \(unpacked) bytes; at most \(maxBytes * unpackedRatio) (\(unpackedRatio) × rich_media.max_zip_bytes)")
        }
        guard directory.entries.contains(where: { $0.name == "index.html" }) else {
            throw ZipProblem("index.html is required at the root of the zip")
        }
        return directory
    }

    /// What is wrong with an entry's path, or nil.
    static func pathProblem(_ name: String) -> String? {
        if name.isEmpty { return "has an empty name" }
        if name.contains("\\") { return "contains a backslash" }
        if name.unicodeScalars.contains(where: { $0.value < 0x20 }) { return "contains a control character" }
        if name.hasPrefix("/") { return "is an absolute path" }
        if let colon = name.firstIndex(of: ":"), name[..<colon].count == 1 { return "starts with a drive letter" }
        if name.split(separator: "/", omittingEmptySubsequences: false).contains("..") { return "contains a .. component" }
        return nil
    }
}
