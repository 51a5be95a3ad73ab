/// A connection whose transactions are statements: `BEGIN`, then `COMMIT`, or `ROLLBACK` when the
/// work in between fails.
public protocol TransactionStatements {
    /// Runs one statement that binds no values and returns no rows.
    func execute(_ sql: String) throws
    /// Whether the connection can still take a `ROLLBACK` after a failure.
    var canRollBack: Bool { get }
}

extension TransactionStatements {
    /// Runs `body` between `begin` and `COMMIT`; rolls back when it throws, where the connection can.
    public func transaction<T>(beginningWith begin: String = "BEGIN", _ body: () throws -> T) throws -> T {
        try execute(begin)
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            if canRollBack { try? execute("ROLLBACK") }
            throw error
        }
    }
}
