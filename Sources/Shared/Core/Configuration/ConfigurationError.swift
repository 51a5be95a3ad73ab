/// A configuration problem, naming the key (as a path such as `apps[0].apns.key_path`) and what is wrong.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    public let key: String
    public let problem: String

    public init(key: String, problem: String) {
        self.key = key
        self.problem = problem
    }

    public var description: String { key.isEmpty ? problem : "\(key): \(problem)" }
}
