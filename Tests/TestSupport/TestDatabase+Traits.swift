import Testing

/// The traits by which a suite or test says how it relates to `HERALD_TEST_DATABASE`. `ops/test`
/// runs the tests once with `sqlite` and runs the integration tests again with `postgres`; a test
/// that cannot or need not run in a pass is skipped there, and the run names it with the reason.
extension Trait where Self == ConditionTrait {
    /// Runs only when Herald's test backend (`TestDatabase.configured`, SQLite when
    /// `HERALD_TEST_DATABASE` is unset) is one of `backends`: the test starts Herald on that backend
    /// and checks what holds there only. `reason` says why the others are left out.
    package static func backends(_ backends: TestDatabase..., reason: String? = nil,
                                 sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        let names = backends.map(\.rawValue).joined(separator: " or ")
        let comment = "runs on \(names) only, and HERALD_TEST_DATABASE is \(TestDatabase.configured.rawValue)"
            + (reason.map { ": " + $0 } ?? "")
        return .enabled(if: backends.contains(TestDatabase.configured), Comment(rawValue: comment), sourceLocation: sourceLocation)
    }

    /// Runs once, in the SQLite pass (`HERALD_TEST_DATABASE` unset or `sqlite`): the test's backend
    /// does not follow `HERALD_TEST_DATABASE`, because it uses no database or sets up the one it
    /// needs (a PostgreSQL server of its own, a schema of the shared one), so another pass would
    /// only repeat it. `reason` says which.
    package static func fixedBackend(_ reason: String, sourceLocation: SourceLocation = #_sourceLocation) -> Self {
        .enabled(if: TestDatabase.configured == .sqlite,
                 Comment(rawValue: "runs in the sqlite pass only, its backend being fixed: \(reason)"), sourceLocation: sourceLocation)
    }
}
