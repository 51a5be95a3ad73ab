import Foundation

extension Configuration {
    /// Reads and validates the file at `path`. Relative paths inside resolve against the file's folder.
    public static func load(path: String) throws(ConfigurationError) -> Configuration {
        let url = URL(fileURLWithPath: path)
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw ConfigurationError(key: "", problem: "cannot read configuration file \(path): \(error.localizedDescription)")
        }
        let json: JSON
        do {
            json = try JSON.parse(data)
        } catch {
            throw ConfigurationError(key: "", problem: "configuration file \(path) is not valid JSON: \(error)")
        }
        return try decode(json, baseDirectory: url.deletingLastPathComponent().path)
    }

    /// Decodes an already-parsed configuration document.
    public static func decode(_ json: JSON, baseDirectory: String) throws(ConfigurationError) -> Configuration {
        func resolve(_ path: String) -> String {
            path.hasPrefix("/") ? path : (baseDirectory as NSString).appendingPathComponent(path)
        }
        var root = try ConfigReader(json, path: "")
        var config = Configuration()

        if let name = try root.string("log_level") {
            guard let level = LogLevel(name: name) else {
                throw ConfigurationError(key: "log_level", problem: "must be one of NONE, ERROR, WARNING, INFO, DEBUG, VERBOSE")
            }
            config.logLevel = level
        }

        if var http = try root.object("http") {
            if let listen = try http.string("listen") {
                guard let (host, port) = parseListenAddress(listen) else {
                    throw ConfigurationError(key: "http.listen", problem: "expected host:port with an IP literal, e.g. 127.0.0.1:8080 or [::1]:8080")
                }
                config.http.host = host
                config.http.port = port
            }
            config.http.maxBodyBytes = try http.int("max_body_bytes", default: config.http.maxBodyBytes, range: 64...1_073_741_824)
            config.http.bulkMaxBodyBytes = try http.int("bulk_max_body_bytes", default: config.http.bulkMaxBodyBytes, range: 64...1_073_741_824)
            if let publicURL = try http.string("public_url") {
                guard let url = URL(string: publicURL), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
                    throw ConfigurationError(key: "http.public_url", problem: "expected an http:// or https:// URL such as https://push.example.com")
                }
                config.http.publicURL = publicURL
            }
            config.http.threads = try http.int("threads", default: config.http.threads, range: 1...256)
            config.http.connectionLimit = try http.int("connection_limit", default: config.http.connectionLimit, range: 1...1_000_000)
            config.http.idleTimeoutSeconds = try http.int("idle_timeout_seconds", default: config.http.idleTimeoutSeconds, range: 1...86_400)
            config.http.headerTimeoutSeconds = try http.int("header_timeout_seconds", default: config.http.headerTimeoutSeconds, range: 1...3600)
            config.http.bodyTimeoutSeconds = try http.int("body_timeout_seconds", default: config.http.bodyTimeoutSeconds, range: 1...3600)
            config.http.bodyMinBytesPerSecond = try http.int(
                "body_min_bytes_per_second", default: config.http.bodyMinBytesPerSecond, range: 0...1_000_000_000)
            if var oneSignal = try http.object("onesignal") {
                for (key, keyPath) in [("add_device_path", \HTTPSettings.oneSignalAddDevicePath),
                                       ("edit_device_path", \HTTPSettings.oneSignalEditDevicePath)] {
                    if let path = try oneSignal.string(key) {
                        guard path.hasPrefix("/") else {
                            throw ConfigurationError(key: oneSignal.keyPath(key), problem: "must start with /")
                        }
                        config.http[keyPath: keyPath] = path
                    }
                }
                try oneSignal.finish()
            }
            for (key, path) in [("add_device_path", config.http.oneSignalAddDevicePath),
                                ("edit_device_path", config.http.oneSignalEditDevicePath)] {
                let reserved = ["/json/", "/api/", "/healthz", "/metrics", "/dashboard"]
                if reserved.contains(where: { path.hasPrefix($0) }) {
                    throw ConfigurationError(key: "http.onesignal.\(key)", problem: "collides with Herald's own endpoints")
                }
            }
            if config.http.oneSignalAddDevicePath == config.http.oneSignalEditDevicePath {
                throw ConfigurationError(key: "http.onesignal.edit_device_path", problem: "must differ from add_device_path")
            }
            try http.finish()
        }

        if var database = try root.object("database") {
            let path = try database.string("path")
            if let path {
                guard !path.isEmpty else { throw ConfigurationError(key: "database.path", problem: "must not be empty") }
                config.database.path = path
            }
            if let url = try database.string("url") {
                guard url.hasPrefix("postgresql://") || url.hasPrefix("postgres://") else {
                    throw ConfigurationError(key: "database.url", problem: "expected a PostgreSQL URI such as postgresql://herald@127.0.0.1:5432/herald")
                }
                guard path == nil else {
                    throw ConfigurationError(key: "database.url", problem: "set either database.path (SQLite) or database.url (PostgreSQL), not both")
                }
                config.database.url = url
            }
            if let passwordFile = try database.string("password_file") {
                guard !passwordFile.isEmpty else { throw ConfigurationError(key: "database.password_file", problem: "must not be empty") }
                guard config.database.url != nil else {
                    throw ConfigurationError(key: "database.password_file", problem: "only applies with database.url (PostgreSQL)")
                }
                config.database.passwordFile = resolve(passwordFile)
            }
            config.database.poolSize = try database.int("pool_size", default: config.database.poolSize, range: 1...100)
            config.database.busyTimeoutMilliseconds = try database.int(
                "busy_timeout_ms", default: config.database.busyTimeoutMilliseconds, range: 0...600_000)
            if database.value("statement_timeout_ms") != nil {
                guard config.database.url != nil else {
                    throw ConfigurationError(key: "database.statement_timeout_ms", problem: "only applies with database.url (PostgreSQL)")
                }
                config.database.statementTimeoutMilliseconds = try database.int(
                    "statement_timeout_ms", default: config.database.statementTimeoutMilliseconds, range: 100...3_600_000)
            }
            if let synchronous = try database.string("synchronous") {
                guard ["full", "normal"].contains(synchronous) else {
                    throw ConfigurationError(key: "database.synchronous", problem: "must be full or normal")
                }
                guard config.database.url == nil else {
                    throw ConfigurationError(key: "database.synchronous",
                                             problem: "only applies to SQLite; with database.url, durability is the PostgreSQL server's synchronous_commit")
                }
                config.database.synchronousFull = synchronous == "full"
            }
            if database.value("cache_mb") != nil {
                guard config.database.url == nil else {
                    throw ConfigurationError(key: "database.cache_mb", problem: "only applies to SQLite; PostgreSQL caches in the server (shared_buffers)")
                }
                config.database.cacheMiB = try database.int("cache_mb", default: config.database.cacheMiB, range: 1...65_536)
            }
            try database.finish()
        }
        config.database.path = resolve(config.database.path)

        if var queue = try root.object("queue") {
            for (key, keyPath) in [("jobs", \QueueSettings.jobs), ("results", \QueueSettings.results)] {
                // One endpoint, or (for workers) the list of every ingest's.
                guard let endpoints = try queue.strings(key, what: "an endpoint") else { continue }
                let isList = queue.value(key)?.arrayValue != nil
                for (index, endpoint) in endpoints.enumerated() {
                    guard let problem = QueueEndpoint.problem(endpoint) else { continue }
                    throw ConfigurationError(key: queue.keyPath(key) + (isList ? "[\(index)]" : ""), problem: problem)
                }
                config.queue[keyPath: keyPath] = endpoints
            }
            config.queue.allowInsecureRemote = try queue.bool("allow_insecure_remote", default: config.queue.allowInsecureRemote)
            if var curve = try queue.object("curve") {
                let file = resolve(try curve.requiredString("secret_key_file"))
                var settings = CurveSettings(secretKeyFile: file,
                                             secretKey: try CurveSettings.readSecretKey(path: file, key: "queue.curve.secret_key_file"))
                // One key for every ingest (they share a key pair), or one per ingest in queue.jobs' order.
                let listsServers = curve.value("server_public_key")?.arrayValue != nil
                if let servers = try curve.strings("server_public_key", what: "a Z85 CURVE public key") {
                    for (index, server) in servers.enumerated() {
                        guard let problem = CurveSettings.keyProblem(server) else { continue }
                        throw ConfigurationError(key: "queue.curve.server_public_key" + (listsServers ? "[\(index)]" : ""),
                                                 problem: "is not a Z85 CURVE public key: \(problem)")
                    }
                    guard servers.count == 1 || servers.count == config.queue.jobs.count else {
                        let endpoints = config.queue.jobs.count
                        throw ConfigurationError(key: "queue.curve.server_public_key",
                                                 problem: "lists \(servers.count) keys, queue.jobs \(endpoints) endpoint\(endpoints == 1 ? "" : "s"): "
                                                     + "give one key for every ingest, or one per endpoint in the same order")
                    }
                    settings.serverPublicKeys = servers.count == 1 ? Array(repeating: servers[0], count: config.queue.jobs.count) : servers
                }
                if let authorized = try curve.string("authorized_keys_file") {
                    let path = resolve(authorized)
                    settings.authorizedKeysFile = path
                    settings.authorizedKeys = try CurveSettings.readAuthorizedKeys(path: path, key: "queue.curve.authorized_keys_file")
                }
                try curve.finish()
                config.queue.curve = settings
            }
            try queue.finish()
            if config.queue.jobs.count != config.queue.results.count {
                throw ConfigurationError(key: "queue.results", problem: "must list as many endpoints as queue.jobs (one pair per ingest)")
            }
            if !Set(config.queue.jobs).isDisjoint(with: config.queue.results) {
                throw ConfigurationError(key: "queue.results", problem: "must differ from queue.jobs")
            }
        }

        if var throttle = try root.object("throttle") {
            if var perDevice = try throttle.object("per_device") {
                config.throttle.perDeviceCount = try perDevice.int("count", default: config.throttle.perDeviceCount, range: 1...1_000_000)
                config.throttle.perDeviceWindowSeconds = try perDevice.int(
                    "window_seconds", default: config.throttle.perDeviceWindowSeconds, range: 1...31_536_000)
                try perDevice.finish()
            }
            try throttle.finish()
        }

        if var retention = try root.object("retention") {
            for (key, keyPath) in [("reports_days", \RetentionSettings.reportsSeconds), ("deliveries_days", \RetentionSettings.deliveriesSeconds),
                                   ("bulk_jobs_days", \RetentionSettings.bulkJobsSeconds)] {
                let days = try retention.number(key, default: Double(config.retention[keyPath: keyPath]) / 86_400, range: 0.001...36_500)
                config.retention[keyPath: keyPath] = Int64((days * 86_400).rounded())
            }
            try retention.finish()
        }
        // The frequency cap counts recorded deliveries: they must outlive its window.
        if config.retention.deliveriesSeconds < Int64(config.throttle.perDeviceWindowSeconds) {
            throw ConfigurationError(key: "retention.deliveries_days", problem: "must cover throttle.per_device.window_seconds")
        }

        if var richMedia = try root.object("rich_media") {
            config.richMedia.maxZipBytes = try richMedia.int("max_zip_bytes", default: config.richMedia.maxZipBytes, range: 1024...1_073_741_824)
            try richMedia.finish()
        }

        if var delivery = try root.object("delivery") {
            config.delivery.defaultTTLSeconds = Int64(try delivery.int(
                "default_ttl_seconds", default: Int(config.delivery.defaultTTLSeconds), range: 0...2_419_200))
            config.delivery.maxInFlight = try delivery.int("max_in_flight", default: config.delivery.maxInFlight, range: 1...100_000)
            try delivery.finish()
        }

        guard let appsValue = root.value("apps") else {
            throw ConfigurationError(key: "apps", problem: "is required: list at least one application")
        }
        guard case .array(let appItems) = appsValue, !appItems.isEmpty else {
            throw ConfigurationError(key: "apps", problem: "expected a non-empty array of applications")
        }
        for (index, item) in appItems.enumerated() {
            let app = try decodeApp(item, path: "apps[\(index)]", resolve: resolve)
            if config.apps.contains(where: { $0.code == app.code }) {
                throw ConfigurationError(key: "apps[\(index)].code", problem: "duplicates application \(app.code)")
            }
            config.apps.append(app)
        }
        try root.finish()
        return config
    }

    static func decodeApp(_ json: JSON, path: String, resolve: (String) -> String) throws(ConfigurationError) -> AppConfiguration {
        var reader = try ConfigReader(json, path: path)
        let code = try reader.requiredString("code")
        guard code.count <= 64, code.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else {
            throw ConfigurationError(key: reader.keyPath("code"), problem: "use letters, digits, '-' and '_' only (64 at most)")
        }
        var app = AppConfiguration(code: code, name: try reader.string("name") ?? code,
                                   apiToken: try reader.requiredString("api_token"))
        if var apns = try reader.object("apns") {
            var settings = APNsSettings(
                teamID: try apns.requiredString("team_id"), keyID: try apns.requiredString("key_id"),
                keyPath: resolve(try apns.requiredString("key_path")), topic: try apns.requiredString("topic"))
            if let url = try apns.string("production_url") { settings.productionURL = try httpsURL(url, key: apns.keyPath("production_url")) }
            if let url = try apns.string("sandbox_url") { settings.sandboxURL = try httpsURL(url, key: apns.keyPath("sandbox_url")) }
            if let caFile = try apns.string("ca_file") {
                guard !caFile.isEmpty else { throw ConfigurationError(key: apns.keyPath("ca_file"), problem: "must not be empty") }
                settings.caFile = resolve(caFile)
            }
            settings.connections = try apns.int("connections", default: settings.connections, range: 1...64)
            try apns.finish()
            app.apns = settings
        }
        if var fcm = try reader.object("fcm") {
            var settings = FCMSettings(serviceAccountPath: resolve(try fcm.requiredString("service_account_path")))
            if let url = try fcm.string("endpoint") { settings.endpoint = try httpsURL(url, key: fcm.keyPath("endpoint")) }
            if let caFile = try fcm.string("ca_file") {
                guard !caFile.isEmpty else { throw ConfigurationError(key: fcm.keyPath("ca_file"), problem: "must not be empty") }
                settings.caFile = resolve(caFile)
            }
            settings.connections = try fcm.int("connections", default: settings.connections, range: 1...64)
            try fcm.finish()
            app.fcm = settings
        }
        if var huawei = try reader.object("huawei") { app.huawei = try decodeHuawei(&huawei, resolve: resolve) }
        if var web = try reader.object("web") {
            var settings = WebPushSettings(vapidPrivateKeyFile: resolve(try web.requiredString("vapid_private_key_file")),
                                           subject: try web.requiredString("subject"))
            let subject = settings.subject
            guard (subject.hasPrefix("mailto:") && subject.count > 7) || (subject.hasPrefix("https://") && subject.count > 8) else {
                throw ConfigurationError(key: web.keyPath("subject"), problem: "expected a mailto: or https:// URI (RFC 8292)")
            }
            if let caFile = try web.string("ca_file") {
                guard !caFile.isEmpty else { throw ConfigurationError(key: web.keyPath("ca_file"), problem: "must not be empty") }
                settings.caFile = resolve(caFile)
            }
            settings.connections = try web.int("connections", default: settings.connections, range: 1...64)
            settings.allowsPrivateEndpoints = try web.bool("allow_private_endpoints", default: false)
            try web.finish()
            app.web = settings
        }
        if let sink = try reader.string("sink") {
            guard !sink.isEmpty else { throw ConfigurationError(key: reader.keyPath("sink"), problem: "must not be empty") }
            app.sink = resolve(sink)
        }
        if var tags = try reader.object("tags") {
            for name in tags.members.keys.sorted() {
                let typeName = try tags.requiredString(name)
                guard let type = TagType.allCases.first(where: { $0.name == typeName }) else {
                    throw ConfigurationError(key: tags.keyPath(name),
                                             problem: "must be one of \(TagType.allCases.map(\.name).joined(separator: ", "))")
                }
                app.tagTypes[name] = type
            }
        }
        try reader.finish()
        if app.apns == nil && app.fcm == nil && app.huawei == nil && app.web == nil && app.sink == nil {
            throw ConfigurationError(key: path, problem: "needs at least one of apns, fcm, huawei, web or sink to deliver pushes")
        }
        return app
    }

    static func httpsURL(_ text: String, key: String) throws(ConfigurationError) -> String {
        guard text.hasPrefix("https://"), text.count > 8 else {
            throw ConfigurationError(key: key, problem: "expected an https:// URL")
        }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    /// Splits `127.0.0.1:8080` or `[::1]:8080` into host and port; nil when malformed.
    public static func parseListenAddress(_ text: String) -> (String, UInt16)? {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
            guard host.contains(":") else { return nil }
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
            let octets = host.split(separator: ".", omittingEmptySubsequences: false)
            guard octets.count == 4, octets.allSatisfy({ UInt8($0) != nil }) else { return nil }
        }
        guard !host.isEmpty, let port = UInt16(portText) else { return nil }
        return (String(host), port)
    }
}
