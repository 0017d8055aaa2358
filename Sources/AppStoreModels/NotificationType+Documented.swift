extension NotificationType {
    /// The subtypes Apple documents for each notification type; a nil element means the type
    /// is also (or only) sent without a subtype. Built from ``NotificationCombination/documented``,
    /// which gives the same pairs in a stable order.
    public static let documentedSubtypes: [NotificationType: [Subtype?]] = {
        var table: [NotificationType: [Subtype?]] = [:]
        for combination in NotificationCombination.documented {
            table[combination.notificationType, default: []].append(combination.subtype)
        }
        return table
    }()

    /// Whether Apple documents `subtype` (nil: no subtype) for this type.
    public func documents(subtype: Subtype?) -> Bool {
        NotificationType.documentedSubtypes[self]?.contains(subtype) ?? false
    }
}
