/// A parsed `devices_filter` before it meets an application (`DeviceFilterParser`): application
/// codes, platform names and tag conditions as written, each with the 0-based character offset
/// of its set for error messages.
public indirect enum DeviceFilterSyntax: Sendable, Equatable {
    case app(code: String, platforms: [String]?, offset: Int)
    /// `condition` is the `[tag, operator, operand]` array of a `conditions` entry.
    case tag(app: String?, condition: JSON, offset: Int)
    case union(DeviceFilterSyntax, DeviceFilterSyntax)
    case intersection(DeviceFilterSyntax, DeviceFilterSyntax)
    case difference(DeviceFilterSyntax, DeviceFilterSyntax)

    /// The application codes the filter names (in `A` and `AT`), first mention first.
    public var applications: [String] {
        var codes: [String] = []
        func visit(_ node: DeviceFilterSyntax) {
            switch node {
            case .app(let code, _, _), .tag(.some(let code), _, _):
                if !codes.contains(code) { codes.append(code) }
            case .tag(nil, _, _):
                break
            case .union(let left, let right), .intersection(let left, let right), .difference(let left, let right):
                visit(left)
                visit(right)
            }
        }
        visit(self)
        return codes
    }

    /// The filter as stored with a message: platform names become codes and tag conditions are
    /// checked against the message's application's tag types (`TagCondition.parse`).
    public func resolve(tagType: (String) -> TagType?, now: Int64) throws(DeviceFilterError) -> DeviceFilter {
        switch self {
        case .app(let code, let names, let offset):
            guard let names else { return .app(code, platforms: nil) }
            var codes: [Int] = []
            for name in names {
                guard let platform = Platform.code(named: name) else {
                    throw DeviceFilterError("unknown platform \"\(name.prefix(20))\" (known: \(Platform.names.joined(separator: ", ")))", at: offset)
                }
                codes.append(platform)
            }
            return .app(code, platforms: codes)
        case .tag(let app, let condition, let offset):
            do {
                return .tag(app: app, try TagCondition.parse(condition, index: 0, tagType: tagType, now: now))
            } catch {
                let prefix = "conditions[0]: "
                throw DeviceFilterError(error.message.hasPrefix(prefix) ? String(error.message.dropFirst(prefix.count)) : error.message,
                                        at: offset)
            }
        case .union(let left, let right):
            return .union(try left.resolve(tagType: tagType, now: now), try right.resolve(tagType: tagType, now: now))
        case .intersection(let left, let right):
            return .intersection(try left.resolve(tagType: tagType, now: now), try right.resolve(tagType: tagType, now: now))
        case .difference(let left, let right):
            return .difference(try left.resolve(tagType: tagType, now: now), try right.resolve(tagType: tagType, now: now))
        }
    }
}
