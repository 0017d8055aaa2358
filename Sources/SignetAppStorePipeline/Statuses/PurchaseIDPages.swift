/// A list of purchase ids read a page at a time, in ascending order: every purchase of a store
/// (`signet reconcile --all`), too many to hold in memory at ten million.
///
/// ``AppStoreStatusSource`` reads it twice: once at open to count the ids and digest them for
/// the checkpoint (holding one page), then as it asks Apple, a page ahead of the ids in flight.
/// Ids that appear after the count (new purchases) wait for the next run; the count bounds this
/// one, so its progress never passes 100 %.
public struct PurchaseIDPages: Sendable {
    /// Up to `limit` ids after `after` (nil: from the first), ascending; fewer only at the end.
    public typealias Read = @Sendable (_ after: String?, _ limit: Int) throws -> [String]

    /// Reads a page. A blocking store read, a page every `pageSize` ids: at Apple's 40
    /// requests a second, one every few minutes.
    public let read: Read
    /// Ids a page holds.
    public var pageSize: Int

    /// - Parameters:
    ///   - pageSize: ids a page holds (default 10,000: under a megabyte of ids).
    ///   - read: the store's query; ascending, strictly after its first argument.
    public init(pageSize: Int = 10_000, read: @escaping Read) {
        self.pageSize = max(1, pageSize)
        self.read = read
    }

    /// Calls `body` with every id in order, a page at a time.
    func forEach(_ body: (String) throws -> Void) throws {
        var after: String?
        while true {
            let page = try read(after, pageSize)
            for id in page { try body(id) }
            guard page.count >= pageSize, let last = page.last else { return }
            after = last
        }
    }
}
