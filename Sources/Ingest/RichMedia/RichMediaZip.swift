/// The rules a rich media upload must meet before anything is stored: a readable zip within the
/// size limit, with `index.html` at its root, no entry that could be written outside the folder
/// the SDK unpacks it into (absolute paths, drive letters, backslashes, `..`), no two entries with
/// the same name (compared without case: iOS file systems ignore it), only regular files and folders
/// (no symbolic link, which unzippers would create and follow), and a bounded size once unpacked:
/// at most `maxBytes` × 10 bytes, and at most 100 times the zip's own size (1 MiB is always
/// allowed); local headers that agree with the central directory, one after the other with nothing
/// unlisted between them (`ZipDirectory.walk`); and data that unpacks to exactly the sizes and
/// CRC-32s the headers declare, counted while unpacking (`ZipEntryData`), so a zip that lies about
/// its size is refused after inflating no more than it declared.
enum RichMediaZip {
    static let unpackedRatio = 10
    /// The most a zip may unpack to per byte of its own size, and the size any zip may unpack to.
    static let compressionRatio = 100
    static let ratioFloor = 1_048_576

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
            if let kind = entry.specialKind { throw ZipProblem("entry \(quoted) is \(kind); only regular files and folders are accepted") }
            unpacked += entry.uncompressedSize
        }
        guard unpacked <= maxBytes * unpackedRatio else {
            throw ZipProblem("the zip unpacks to \(unpacked) bytes; at most \(maxBytes * unpackedRatio) (\(unpackedRatio) × rich_media.max_zip_bytes)")
        }
        guard unpacked <= max(bytes.count * compressionRatio, ratioFloor) else {
            throw ZipProblem("the zip unpacks to \(unpacked) bytes, \(unpacked / bytes.count) times its own size; at most "
                             + "\(compressionRatio) times (or \(ratioFloor) bytes) are accepted")
        }
        guard directory.entries.contains(where: { $0.name == "index.html" }) else {
            throw ZipProblem("index.html is required at the root of the zip")
        }
        // The declared sizes are within bounds: each entry must unpack to exactly its own.
        for entry in directory.entries { try ZipEntryData.verify(bytes, entry) }
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
