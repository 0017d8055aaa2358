package import AppStoreModels
package import SignetJWS

/// One purchase's notifications (otid 1000, SUBSCRIBED at t0 for 30 days) from the table in
/// docs/state-machine.md: the table's rows (SignetStateTests) are built from them, and the
/// PostgreSQL store's tests feed them to several instances.
package enum Table {
    package typealias F = Fixture
    package static let t0 = F.t0, day = F.day
    package static let tx1 = F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0)
    package static let subscribed = F.notification(.subscribed, .initialBuy, uuid: "s1", signed: t0, transaction: tx1, renewal: F.renewal(signed: t0))
    package static let disabled = F.notification(
        .didChangeRenewalStatus, .autoRenewDisabled, uuid: "d1", signed: t0 + 5 * day,
        transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 5 * day),
        renewal: F.renewal(autoRenew: false, signed: t0 + 5 * day))
    package static let expiredVoluntary = F.notification(
        .expired, .voluntary, uuid: "e1", signed: t0 + 31 * day,
        transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 31 * day),
        renewal: F.renewal(autoRenew: false, signed: t0 + 31 * day, expirationIntent: 1))
    package static let failNoGrace = F.notification(
        .didFailToRenew, uuid: "f1", signed: t0 + 30 * day,
        transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 30 * day),
        renewal: F.renewal(signed: t0 + 30 * day, billingRetry: true, expirationIntent: 2))
    package static let failGrace = F.notification(
        .didFailToRenew, .gracePeriod, uuid: "g1", signed: t0 + 30 * day,
        transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 30 * day),
        renewal: F.renewal(signed: t0 + 30 * day, billingRetry: true, graceEnds: t0 + 36 * day, expirationIntent: 2))
    package static let downgrade = F.notification(
        .didChangeRenewalPref, .downgrade, uuid: "dg1", signed: t0 + 10 * day,
        transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 10 * day),
        renewal: F.renewal(product: "pro.basic", signed: t0 + 10 * day))
    package static let refund = F.notification(
        .refund, uuid: "r1", signed: t0 + 10 * day,
        transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 10 * day,
                                   revoked: t0 + 10 * day, revocationType: .refundFull))
    package static let consumable = F.notification(
        .oneTimeCharge, uuid: "c1", signed: t0,
        transaction: F.transaction(otid: "c1", id: "c1", product: "coins.100", type: .consumable, purchase: t0, signed: t0))
    package static let familySubscribed = F.notification(
        .subscribed, .initialBuy, uuid: "fs1", signed: t0,
        transaction: F.transaction(otid: "f1", id: "f1", purchase: t0, expires: t0 + 30 * day, signed: t0, ownership: .familyShared),
        renewal: F.renewal(otid: "f1", signed: t0))

    package static func upgrade(_ type: NotificationType, uuid: String) -> VerifiedPayload {
        F.notification(
            type, .upgrade, uuid: uuid, signed: t0 + 10 * day,
            transaction: F.transaction(id: "2000", product: "pro.yearly", purchase: t0 + 10 * day, expires: t0 + 375 * day, signed: t0 + 10 * day),
            renewal: F.renewal(product: "pro.yearly", signed: t0 + 10 * day))
    }

    package static func unchanged(_ type: NotificationType, _ subtype: Subtype?, uuid: String) -> VerifiedPayload {
        F.notification(
            type, subtype, uuid: uuid, signed: t0 + 10 * day,
            transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: t0 + 10 * day),
            renewal: F.renewal(signed: t0 + 10 * day))
    }

    package static func expired(_ subtype: Subtype, after history: VerifiedPayload? = nil, at: Int64) -> VerifiedPayload {
        F.notification(
            .expired, subtype, uuid: "x-\(subtype.rawValue)", signed: at,
            transaction: F.transaction(id: "1000", purchase: t0, expires: t0 + 30 * day, signed: at),
            renewal: F.renewal(autoRenew: false, signed: at, expirationIntent: 1))
    }
}
