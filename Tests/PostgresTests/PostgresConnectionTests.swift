import Testing
import Core
@testable import Postgres
import TestSupport

/// The libpq wrapper against a real server: typed parameters and results, and how failures map to
/// `BackendFailure` (SQLSTATE kept, retryable when a later call may succeed).
@Suite struct PostgresConnectionTests {
    let connection: PostgresConnection

    init() throws {
        connection = try PostgresConnection(PostgresConnectionSettings(url: try PostgresServer.shared().makeSchema()))
    }

    @Test func parametersAndResultsKeepTheirValues() throws {
        let text = "quote ' double \" backslash \\ comma , braces {} NULL é 漢字 🙂"
        let bytes = (0...255).map { UInt8($0) }
        let row = try #require(try connection.first(
            "SELECT $1::bigint, $2::float8, $3::boolean, $4::text, $5::bytea, $6::bytea, $7::text, $8::bigint",
            [.integer(-9_007_199_254_740_993), .double(0.1), .boolean(true), .text(text), .bytea(bytes), .bytea([]), .null,
             .integer(Int64.max)]
        ) { row in
            (row.int(0), row.double(1), row.bool(2), row.text(3), row.bytes(4), row.bytes(5), row.optionalText(6), row.int(7),
             row.isNull(5))
        })
        #expect(row.0 == -9_007_199_254_740_993 && row.1 == 0.1 && row.2 && row.3 == text)
        #expect(row.4 == bytes && row.5.isEmpty && row.6 == nil && row.7 == Int64.max && !row.8)
    }

    @Test func arraysRoundTripThroughUnnest() throws {
        let texts: [String?] = ["a", "quote \" and \\ back", nil, "", "NULL", "{x,y}", "\"\\\"", "end\\", "é \"漢字\" 🙂"]
        let back = try connection.rows("SELECT item FROM unnest($1::text[]) WITH ORDINALITY AS u(item, n) ORDER BY n", [.texts(texts)]) {
            $0.optionalText(0)
        }
        #expect(back == texts)
        let numbers = try connection.rows("SELECT unnest($1::bigint[]), unnest($2::float8[]), unnest($3::boolean[])",
                                          [.integers([1, -2, Int64.min, 0, 10, -907]), .doubles([1.5, -0.25, 1e300, 0, 2, 3]),
                                           .booleans([true, false, true, false, true, false])]) {
            ($0.int(0), $0.double(1), $0.bool(2))
        }
        #expect(numbers.map(\.0) == [1, -2, Int64.min, 0, 10, -907] && numbers.map(\.1) == [1.5, -0.25, 1e300, 0, 2, 3]
            && numbers.map(\.2) == [true, false, true, false, true, false])
        #expect(try connection.rows("SELECT unnest($1::bigint[])", [.integers([])]) { $0.int(0) }.isEmpty)
    }

    @Test func statementsArePreparedOnceAndCountChanges() throws {
        try connection.execute("CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL)")
        for id in 1...5 {
            #expect(try connection.run("INSERT INTO items (id, name) VALUES ($1, $2)", [.integer(Int64(id)), .text("n\(id)")]) == 1)
        }
        #expect(try connection.run("UPDATE items SET name = 'x' WHERE id > $1", [.integer(2)]) == 3)
        let prepared = try connection.first("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE 'INSERT INTO items%'") { $0.int(0) }
        #expect(prepared == 1)
    }

    @Test func aTransactionThatThrowsIsRolledBack() throws {
        try connection.execute("CREATE TABLE items (id bigint PRIMARY KEY)")
        #expect(throws: PostgresError.self) {
            try connection.transaction {
                try connection.run("INSERT INTO items VALUES (1)")
                try connection.run("INSERT INTO items VALUES (1)")
            }
        }
        #expect(!connection.inTransaction)
        #expect(try connection.first("SELECT count(*) FROM items") { $0.int(0) } == 0)
    }

    @Test func failuresKeepTheirSQLStateAndSayWhetherToRetry() throws {
        try connection.execute("CREATE TABLE items (id bigint PRIMARY KEY)")
        try connection.run("INSERT INTO items VALUES ($1)", [.integer(424_242)])
        let duplicate = try #require(throws: PostgresError.self) { try connection.run("INSERT INTO items VALUES ($1)", [.integer(424_242)]) }
        #expect(duplicate.sqlState == "23505" && !duplicate.isRetryable)
        #expect(duplicate.failure.backend == "postgres" && duplicate.failure.message.hasPrefix("SQLSTATE 23505"))
        // Bound values (tokens, hwids) never reach the error text.
        #expect(!duplicate.failure.description.contains("424242"))

        // A client's value the server cannot store is the client's mistake (210, never a 500 the
        // SDKs retry); a malformed literal or a division by zero only Herald's own values and SQL
        // can cause, so they stay Herald's errors (logged, 500).
        for (state, retryable, invalid) in [("40001", true, false), ("40P01", true, false), ("53300", true, false), ("22012", false, false),
                                            ("22P02", false, false), ("22001", false, true), ("22021", false, true), ("22003", false, true),
                                            ("54000", false, true)] {
            let raised = try #require(throws: PostgresError.self) {
                try connection.execute("DO $$ BEGIN RAISE EXCEPTION 'raised' USING ERRCODE = '\(state)'; END $$")
            }
            #expect(raised.sqlState == state && raised.failure.isRetryable == retryable && raised.isDataError == invalid, "\(state)")
            guard case .invalid = PostgresDatabase.storeError(raised) else {
                #expect(!invalid, "\(state) is an invalid value")
                continue
            }
            #expect(invalid, "\(state) is not the client's")
        }
        // Distinct SQLSTATEs give distinct codes.
        #expect(PostgresError(sqlState: "40001", message: "", context: "").code != PostgresError(sqlState: "40P01", message: "", context: "").code)
        #expect(connection.isHealthy)
    }

    @Test func aConnectionTheServerDropsIsRetryableAndUnhealthy() throws {
        let victim = try PostgresConnection(PostgresConnectionSettings(url: try PostgresServer.shared().url))
        let pid = try #require(try victim.first("SELECT pg_backend_pid()") { $0.int(0) })
        try connection.run("SELECT pg_terminate_backend($1::int)", [.integer(pid)])
        let lost = try #require(throws: PostgresError.self) { try victim.run("SELECT 1") }
        #expect(lost.isConnectionLost && lost.failure.isRetryable, "\(lost)")
        #expect(!victim.isHealthy)
    }

    /// `statement_timeout_ms` ends a statement that runs longer (retryable, the connection kept);
    /// `unbounded`, which the migrations run in, lifts it and puts it back afterwards.
    @Test func theStatementTimeoutBoundsStatementsExceptUnboundedOnes() throws {
        var settings = PostgresConnectionSettings(url: try PostgresServer.shared().makeSchema())
        settings.statementTimeoutMilliseconds = 200
        let bounded = try PostgresConnection(settings)
        let timedOut = try #require(throws: PostgresError.self) { try bounded.run("SELECT pg_sleep(1)") }
        #expect(timedOut.sqlState == "57014" && timedOut.failure.isRetryable && bounded.isHealthy, "\(timedOut)")
        try bounded.unbounded { _ = try bounded.run("SELECT pg_sleep(0.5)") }
        #expect(throws: PostgresError.self) { try bounded.run("SELECT pg_sleep(1)") }
        #expect(try bounded.first("SHOW statement_timeout") { $0.text(0) } == "200ms")
    }

    @Test func aServerThatIsNotThereFailsFastAndRetryably() throws {
        let port = try HeraldProcesses.freePort()
        let refused = try #require(throws: PostgresError.self) {
            _ = try PostgresConnection(PostgresConnectionSettings(url: "postgresql://herald@127.0.0.1:\(port)/postgres"))
        }
        #expect(refused.sqlState == "08006" && refused.isRetryable)
    }

    /// A server that wants a password: the one of `database.password_file` opens the store, also
    /// over a wrong one in the URL; none, or a wrong one, is refused with the server's reason.
    @Test func aServerThatWantsAPasswordTakesTheOneOfThePasswordFile() throws {
        let server = try PostgresServer(passwordRole: "app")
        try server.psql("CREATE ROLE app LOGIN PASSWORD 'from-the-file'")
        try server.psql("CREATE DATABASE app OWNER app")
        let folder = try TemporaryDirectory()
        let apps = [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")]
        func open(_ url: String, passwordIn contents: String?) -> StoreError? {
            var settings = DatabaseSettings(path: "unused")
            settings.url = url
            if let contents {
                settings.passwordFile = folder.file("password")
                try? contents.write(toFile: folder.file("password"), atomically: true, encoding: .utf8)
            }
            do {
                _ = try PostgresBackend(database: settings, apps: apps)
                return nil
            } catch {
                return error
            }
        }
        let url = "postgresql://app@127.0.0.1:\(server.port)/app"
        #expect(open(url, passwordIn: "from-the-file\n") == nil)
        #expect(open("postgresql://app:wrong@127.0.0.1:\(server.port)/app", passwordIn: "from-the-file") == nil)
        for (contents, reason) in [(nil, "no password supplied"), ("wrong\n", "password authentication failed")] as [(String?, String)] {
            guard case .backend(let failure) = open(url, passwordIn: contents) else {
                Issue.record("opened without the right password (\(String(describing: contents)))")
                continue
            }
            #expect(failure.message.contains(reason), "\(failure.message)")
        }
    }

    @Test func theURLsParametersWinOverHeraldsDefaultsAndThePasswordFileWinsOverTheURL() throws {
        let keywords = PostgresConnectionSettings(url: "postgresql://h@db/herald?connect_timeout=9", password: "secret").keywords.map(\.0)
        let url = try #require(keywords.firstIndex(of: "dbname"))
        #expect(keywords.firstIndex(of: "connect_timeout")! < url && keywords.firstIndex(of: "password")! > url)

        var settings = DatabaseSettings(path: "unused")
        settings.url = try PostgresServer.shared().url
        settings.passwordFile = "/nonexistent/herald-password"
        let error = try #require(throws: StoreError.self) {
            _ = try PostgresBackend(database: settings, apps: [AppConfiguration(code: "APP-1", name: "One", apiToken: "t", sink: "s")])
        }
        guard case .backend(let failure) = error else { throw error }
        #expect(failure.context == "reading database.password_file" && !failure.isRetryable)
        #expect(failure.message.hasPrefix("cannot read /nonexistent/herald-password: "), "\(failure.message)")
    }
}
