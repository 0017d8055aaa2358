/// The audit log of operator actions taken through Apple (``SupportActionRecord``):
/// `signet support` and the console write it, the customer's page and `signet support audit`
/// read it.
package protocol SupportAuditStore: AnyObject, Sendable {
    /// Keeps `record` unless an action with its request identifier is kept already; returns
    /// the one that stands (the earlier, when the action was run before).
    func beginSupportAction(_ record: SupportActionRecord) throws -> SupportActionRecord
    /// Records Apple's answer to a kept action (its status, answer and when).
    func finishSupportAction(_ record: SupportActionRecord) throws
    /// The action with this request identifier; nil when none was recorded.
    func supportAction(requestIdentifier: String) throws -> SupportActionRecord?
    /// The actions on one purchase, oldest first.
    func supportActions(originalTransactionId: String) throws -> [SupportActionRecord]
    /// The actions recorded at or after `since` (ms since 1970), oldest first, at most `limit`.
    func supportActions(since: Int64, limit: Int) throws -> [SupportActionRecord]
}
