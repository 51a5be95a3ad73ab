/// Walks a subcommand's arguments: `--name value`, `--name=value` and bare flags, each problem one
/// line for standard error (`FleetOptions.Problem`, exit status 2).
struct ArgumentCursor {
    private let arguments: [String]
    private var index = -1
    /// The current argument as given, its name (before any `=`), and its inline value.
    private(set) var argument = ""
    private(set) var name = ""
    private var inline: String?

    init(_ arguments: [String]) { self.arguments = arguments }

    /// Moves to the next argument; false at the end.
    mutating func next() -> Bool {
        index += 1
        guard index < arguments.count else { return false }
        argument = arguments[index]
        name = argument
        inline = nil
        if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
            name = String(argument[..<equals])
            inline = String(argument[argument.index(after: equals)...])
        }
        return true
    }

    /// The current option's value (inline, or the next argument).
    mutating func value() throws(FleetOptions.Problem) -> String {
        if let inline { return inline }
        index += 1
        guard index < arguments.count, !arguments[index].hasPrefix("--") || Double(arguments[index]) != nil else {
            throw FleetOptions.Problem("\(name) needs a value")
        }
        return arguments[index]
    }

    /// Checks that the current option, a flag, was given no value.
    func flag() throws(FleetOptions.Problem) {
        if inline != nil { throw FleetOptions.Problem("\(name) takes no value") }
    }
}
