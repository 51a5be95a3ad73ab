import Foundation

/// `queue.curve`: ZeroMQ CURVE on the queue endpoints, so that workers on other hosts talk to
/// ingest encrypted and only with a key ingest knows. Keys are Z85 text, 40 characters (32 bytes).
public struct CurveSettings: Sendable, Equatable {
    /// `queue.curve.secret_key_file`: this process's secret key (`--generate-curve-key` writes one).
    public var secretKeyFile: String
    /// The secret key read from that file.
    public var secretKey: String
    /// `queue.curve.server_public_key` (herald-worker): each ingest's public key, one per endpoint
    /// of `queue.jobs` and in its order (a single key in the file is every ingest's); empty when unset.
    public var serverPublicKeys: [String]
    /// `queue.curve.authorized_keys_file` (herald-ingest): the workers' public keys, one per line.
    public var authorizedKeysFile: String?
    /// The keys read from that file at start (ingest re-reads it on SIGHUP).
    public var authorizedKeys: Set<String> = []

    public init(secretKeyFile: String, secretKey: String, serverPublicKeys: [String] = [], authorizedKeysFile: String? = nil,
                authorizedKeys: Set<String> = []) {
        self.secretKeyFile = secretKeyFile
        self.secretKey = secretKey
        self.serverPublicKeys = serverPublicKeys
        self.authorizedKeysFile = authorizedKeysFile
        self.authorizedKeys = authorizedKeys
    }

    /// Whether `text` is a CURVE key: Z85 text of 32 bytes.
    public static func isKey(_ text: some StringProtocol) -> Bool { keyProblem(text) == nil }

    /// Why `text` is not a CURVE key (40 Z85 characters that decode to 32 bytes), or nil when it is
    /// one. A group of 5 characters above 2^32 − 1 is not Z85: libzmq would refuse the key only
    /// once the queue sockets are set up.
    public static func keyProblem(_ text: some StringProtocol) -> String? {
        let count = text.utf8.count
        guard count == 40 else { return "\(count) characters, not 40" }
        do {
            _ = try Z85.decode(text)
            return nil
        } catch {
            return error.description
        }
    }

    /// The secret key in the file at `path`: its only line, a Z85 key.
    public static func readSecretKey(path: String, key: String) throws(ConfigurationError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(key: key, problem: "cannot read \(path) (create one with --generate-curve-key \(path))")
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if let problem = keyProblem(text) {
            throw ConfigurationError(key: key, problem: "\(path) does not hold a Z85 CURVE secret key: \(problem)")
        }
        return text
    }

    /// The public keys of an authorized-keys file: one per line (LF or CRLF), first on its line;
    /// anything after the key and a space or tab (a comment naming the worker) is ignored. Blank
    /// lines are skipped, and so are lines starting with `#`: no key starts with it (`#` is Z85's
    /// last character, and a group starting with it stands for more than 2^32 − 1).
    public static func readAuthorizedKeys(path: String, key: String) throws(ConfigurationError) -> Set<String> {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(key: key, problem: "cannot read \(path)")
        }
        var keys: Set<String> = []
        for (number, line) in String(decoding: data, as: UTF8.self).split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            guard let word = line.split(whereSeparator: \.isWhitespace).first, !word.hasPrefix("#") else { continue }
            if let problem = keyProblem(word) {
                throw ConfigurationError(key: key, problem: "\(path) line \(number + 1) is not a Z85 CURVE public key: \(problem)")
            }
            keys.insert(String(word))
        }
        return keys
    }
}

extension QueueSettings {
    /// Fails, naming the endpoint's key, when ingest cannot bind an endpoint (a host name), would
    /// listen beyond loopback without CURVE (unless `queue.allow_insecure_remote`), or when CURVE
    /// lacks ingest's authorized keys.
    public func checkIngest() throws(ConfigurationError) {
        guard jobs.count == 1 else {
            throw ConfigurationError(key: "queue.jobs", problem: "herald-ingest binds one endpoint; list every ingest's only in the workers' configuration")
        }
        for (key, endpoint) in [("queue.jobs", jobs[0]), ("queue.results", results[0])] {
            if let problem = QueueEndpoint.bindProblem(endpoint) { throw ConfigurationError(key: key, problem: problem) }
        }
        if let curve {
            guard curve.authorizedKeysFile != nil else {
                throw ConfigurationError(key: "queue.curve.authorized_keys_file", problem: "is required on herald-ingest when queue.curve is set")
            }
            return
        }
        guard !allowInsecureRemote else { return }
        for (key, endpoint) in [("queue.jobs", jobs[0]), ("queue.results", results[0])] where !QueueEndpoint.isLocal(endpoint) {
            throw ConfigurationError(key: key, problem: "\(endpoint) listens beyond loopback without CURVE: set queue.curve "
                                     + "(see docs/deploy.md) or queue.allow_insecure_remote")
        }
    }

    /// Fails when CURVE lacks the worker's server key.
    public func checkWorker() throws(ConfigurationError) {
        if let curve, curve.serverPublicKeys.isEmpty {
            throw ConfigurationError(key: "queue.curve.server_public_key", problem: "is required on herald-worker when queue.curve is set")
        }
    }
}
