import Testing
@testable import Core

/// `database`: a SQLite file by default, or PostgreSQL with `url`, never both.
@Suite struct DatabaseConfigurationTests {
    static let app: JSON = ["code": "ABCDE-12345", "api_token": "t", "sink": "out/sink.jsonl"]

    func decode(_ database: JSON) throws(ConfigurationError) -> Configuration {
        try Configuration.decode(["database": database, "apps": [Self.app]], baseDirectory: "/etc/herald")
    }

    @Test func aURLChoosesPostgreSQLWithItsPasswordFileAndPool() throws {
        let config = try decode(["url": "postgresql://herald@db.example:5432/herald", "password_file": "secrets/pg", "pool_size": 4])
        #expect(config.database.url == "postgresql://herald@db.example:5432/herald")
        #expect(config.database.passwordFile == "/etc/herald/secrets/pg" && config.database.poolSize == 4)
        #expect(try decode([:]).database.url == nil && (try decode([:]).database.poolSize) == 8)
    }

    @Test func pathAndURLTogetherAreRefusedNamingTheKey() {
        let error = #expect(throws: ConfigurationError.self) {
            try decode(["path": "h.sqlite", "url": "postgresql://herald@127.0.0.1/herald"])
        }
        #expect(error?.key == "database.url" && error?.problem.contains("not both") == true)
    }

    @Test func badPostgreSQLSettingsNameTheirKey() {
        for (database, key) in [(["url": "mysql://x"], "database.url"), (["url": ""], "database.url"),
                                (["password_file": "pw"], "database.password_file"),
                                (["url": "postgres://h/db", "password_file": ""], "database.password_file"),
                                (["url": "postgres://h/db", "pool_size": 0], "database.pool_size")] as [(JSON, String)] {
            let error = #expect(throws: ConfigurationError.self) { try decode(database) }
            #expect(error?.key == key, "\(database)")
        }
    }

    @Test func synchronousIsForSQLiteOnlyAndRefusedWithAURL() throws {
        #expect(try decode(["synchronous": "normal"]).database.synchronousFull == false)
        let error = #expect(throws: ConfigurationError.self) {
            try decode(["url": "postgresql://herald@127.0.0.1/herald", "synchronous": "full"])
        }
        #expect(error?.key == "database.synchronous" && error?.problem.contains("SQLite") == true)
    }

    @Test func cacheSizeIsForSQLiteOnlyAndBounded() throws {
        #expect(try decode(["path": "h.sqlite"]).database.cacheMiB == 64)
        #expect(try decode(["cache_mb": 16]).database.cacheMiB == 16)
        for database in [["cache_mb": 0], ["cache_mb": "16"], ["url": "postgresql://herald@127.0.0.1/herald", "cache_mb": 16]] as [JSON] {
            let error = #expect(throws: ConfigurationError.self) { try decode(database) }
            #expect(error?.key == "database.cache_mb", "\(database)")
        }
    }

    @Test func statementTimeoutIsForPostgreSQLOnlyAndBounded() throws {
        let url: JSON = "postgresql://herald@127.0.0.1/herald"
        #expect(try decode(["url": url]).database.statementTimeoutMilliseconds == 15000)
        #expect(try decode(["url": url, "statement_timeout_ms": 2000]).database.statementTimeoutMilliseconds == 2000)
        for database in [["url": url, "statement_timeout_ms": 0], ["url": url, "statement_timeout_ms": "2000"],
                         ["path": "h.sqlite", "statement_timeout_ms": 2000]] as [JSON] {
            let error = #expect(throws: ConfigurationError.self) { try decode(database) }
            #expect(error?.key == "database.statement_timeout_ms", "\(database)")
        }
    }

    @Test func logsNameTheURLWithoutItsPassword() throws {
        #expect(try decode(["path": "h.sqlite"]).database.location == ("database.path", "/etc/herald/h.sqlite"))
        for (url, shown) in [("postgresql://herald:s3cret@db.example:5432/herald?sslmode=require",
                              "postgresql://herald@db.example:5432/herald?sslmode=require"),
                             ("postgres://herald@h1,h2/herald?password=s3cret&connect_timeout=3",
                              "postgres://herald@h1,h2/herald?connect_timeout=3"),
                             ("postgresql://u:p%40ss@h/db?password=x", "postgresql://u@h/db"),
                             ("postgresql:///herald", "postgresql:///herald")] {
            let location = try decode(["url": .string(url)]).database.location
            #expect(location == ("database.url", shown), "\(url)")
        }
    }
}
