import Foundation
import Core
import HTTPServer

/// `GET /rich-media/<app>/<code>.zip`: a hosted page as the SDKs download it, without
/// authentication (devices hold no API token). The ETag is the zip's SHA-256, so a client that
/// sends it back in `If-None-Match` gets 304; `Cache-Control: public, no-cache` lets devices and
/// proxies keep the zip but ask again each time, since an upload replaces it under the same
/// address; a single `Range` is answered 206 (or 416 when it lies past the end). An unavailable
/// database is 503 with `Retry-After`, so that the SDK tries again.
struct RichMediaFiles: Sendable {
    let store: any RichMediaStore
    let logger: Logger

    static let cacheControl = "public, no-cache"

    func handle(path: String, ifNoneMatch: String?, range: String?) -> HTTPResponse {
        let rest = path.dropFirst(RichMediaLinks.pathPrefix.count).split(separator: "/", omittingEmptySubsequences: false)
        guard rest.count == 2, rest[1].hasSuffix(".zip") else { return .json(["error": "not found"], status: 404) }
        let app = String(rest[0]), code = String(rest[1].dropLast(4))
        guard RichMediaLinks.isValidCode(code) else { return .json(["error": "not found"], status: 404) }
        do {
            // The metadata first: a revalidation (304) never reads the zip.
            guard let page = try store.page(app: app, code: code) else { return .json(["error": "not found"], status: 404) }
            let etag = "\"\(page.sha256)\""
            if let ifNoneMatch, Self.matches(ifNoneMatch, etag: etag) {
                return HTTPResponse(status: 304, headers: [("ETag", etag), ("Cache-Control", Self.cacheControl)])
            }
            guard let (stored, bytes) = try store.zip(app: app, code: code) else { return .json(["error": "not found"], status: 404) }
            var headers = [("ETag", "\"\(stored.sha256)\""), ("Cache-Control", Self.cacheControl), ("Accept-Ranges", "bytes"),
                           ("Content-Type", "application/zip")]
            switch range.map({ ByteRange.parse($0, size: bytes.count) }) {
            case .satisfiable(let bounds)?:
                headers.append(("Content-Range", "bytes \(bounds.lowerBound)-\(bounds.upperBound)/\(bytes.count)"))
                return HTTPResponse(status: 206, headers: headers, body: Array(bytes[bounds]))
            case .unsatisfiable?:
                return HTTPResponse(status: 416, headers: [("Content-Range", "bytes */\(bytes.count)"), ("Content-Type", "text/plain; charset=utf-8")],
                                    body: Array("the range lies outside the \(bytes.count)-byte zip".utf8))
            case .ignored?, nil:
                return HTTPResponse(status: 200, headers: headers, body: bytes)
            }
        } catch {
            return RequestFailure(error, route: "rich media download", logger: logger).json
        }
    }

    /// Whether an `If-None-Match` list names `etag` (weak comparison, as RFC 9110 asks for it).
    static func matches(_ header: String, etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            var tag = candidate.trimmingCharacters(in: .whitespaces)
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            return tag == etag
        }
    }
}

/// One `Range: bytes=…` request header against a body of `size` bytes (RFC 9110 §14).
enum ByteRange: Equatable {
    case satisfiable(ClosedRange<Int>)
    case unsatisfiable
    /// Not a single byte range Herald serves (another unit, several ranges, bad syntax): the whole body is sent.
    case ignored

    static func parse(_ header: String, size: Int) -> ByteRange {
        let value = header.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes=") else { return .ignored }
        let spec = value.dropFirst(6).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .ignored }
        let first = spec[..<dash].trimmingCharacters(in: .whitespaces), last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        guard first.allSatisfy(\.isASCII), last.allSatisfy(\.isASCII) else { return .ignored }
        if first.isEmpty {
            // A suffix: the last N bytes.
            guard let count = Int(last) else { return .ignored }
            guard count > 0, size > 0 else { return .unsatisfiable }
            return .satisfiable(max(0, size - count)...(size - 1))
        }
        guard let start = Int(first) else { return .ignored }
        let end: Int
        if last.isEmpty {
            end = size - 1
        } else {
            guard let given = Int(last), given >= start else { return .ignored }
            end = min(given, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .satisfiable(start...end)
    }
}
