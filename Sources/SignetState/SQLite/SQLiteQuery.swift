/// One SQL statement the store prepares once per connection and reuses.
///
/// A class so a connection finds its prepared statement by identity: keying the cache by
/// the SQL text would hash and compare hundreds of bytes on every use.
final class SQLiteQuery: Sendable {
    let sql: String

    init(_ sql: String) { self.sql = sql }
}
