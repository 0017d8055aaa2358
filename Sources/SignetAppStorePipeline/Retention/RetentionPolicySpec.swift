import Foundation
package import SignetAppStoreAPI
public import SignetCore
import SignetState

extension ComponentSpec {
    /// The top-level `retention:` section: Apple's Get Retention Message requests answered on
    /// the webhook's listener (docs/retention.md).
    package static let retentionSection = ComponentSpec(
        name: "retention",
        summary: "answers Apple's real-time retention requests on the webhook's listener, from Signet's state",
        description: """
            With `source: {type: http}`, Apple's Get Retention Message requests POSTed to `path` are verified as a \
            notification is (the pipeline's verify stage: roots, environment, bundle id, app Apple ID), the customer's \
            purchase is read from the store, and the first rule that matches picks the answer; no rule, an unknown \
            purchase or a store slower than decision_timeout answers default_message. A request that does not verify \
            gets 403 and no answer. docs/retention.md.
            """,
        fields: [
            ConfigField("path", .string, .default("/retention"), "the path on the webhook's listener Apple POSTs requests to"),
            ConfigField(
                "default_message", .string, .required,
                "the approved text message (its UUID) answered when no rule decides: set it as the products' default message in App Store Connect too",
                example: "${SIGNET_RETENTION_DEFAULT_MESSAGE}"),
            ConfigField("store", .string, .default("default"), "the state store purchases are read from (a name under stores:)"),
            ConfigField(
                "decision_timeout", .duration(.milliseconds(1)...(.milliseconds(650))), .default("150ms"),
                "a lookup slower than this answers default_message (Apple allows about 700 ms in all)"),
            ConfigField(
                "max_pending_lookups", .int(1...100_000), .default("256"),
                "lookups running at most; beyond it requests are answered default_message at once", advanced: true),
            ConfigField(
                "offer_signature", .enumeration(RetentionPolicy.OfferSignatureVersion.allCases.map(\.rawValue)), .default("v2"),
                "how promotional offers are signed: v2 (a JWS, Apple's recommendation) or v1 (the legacy signature)"),
            ConfigField(
                "keep_answers", .duration(.seconds(86_400)...(.seconds(10 * 366 * 86_400))), .default("400d"),
                "answers older than this are deleted from the store (hourly); at least the widest frequency_cap window, which counts them",
                advanced: true),
            ConfigField("rules", .objectList(RetentionRule.fields), .optional, "checked in order; the first that matches answers"),
        ] + AppStoreAPISettings.fields.filter { RetentionPolicy.keyFields.contains($0.name) },
        examples: [
            """
            retention:
              path: /retention
              default_message: 0d6a8f2e-3f4b-4c55-9a1e-2b7c8d9e0f11
              rules:
                - name: yearly-switch
                  when: { product: [com.example.pro.monthly], state: [active], locale: [en-US] }
                  alternate_product: { message: 6f1e3c2a-1b2c-4d5e-8f90-a1b2c3d4e5f6, product: com.example.pro.yearly }
                - name: win-back
                  when: { state: [billing_retry, grace_period] }
                  promotional_offer: { message: 9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d, offer: stay.50 }
                  frequency_cap: { max: 1, within: 180d }
            """,
        ])
}

extension RetentionRule {
    /// The keys of one `rules:` item.
    static let fields: [ConfigField] = [
        ConfigField("name", .string, .required, "the rule's name, in metrics and logs"),
        ConfigField("when", .object([
            ConfigField("product", .stringList(allowed: nil), .optional, "the request's product ids; a trailing * matches a prefix"),
            ConfigField("entitlement", .stringList(allowed: nil), .optional, "entitlement names the purchase's product grants (any of them)"),
            ConfigField(
                "state", .stringList(allowed: SubscriptionState.allCases.map(\.rawValue)), .optional,
                "the purchase's state as Signet keeps it"),
            ConfigField("refunded", .bool, .optional, "whether the purchase's latest transaction was refunded or revoked"),
            ConfigField(
                "refund_requested", .bool, .optional,
                "whether Apple asked a refund question (CONSUMPTION_REQUEST) about any of the purchase's transactions, whatever its outcome"),
            ConfigField(
                "consent_restricted", .bool, .default("false"),
                "true: only customers who withdrew consent (RESCIND_CONSENT in force); false: never them"),
            ConfigField("locale", .stringList(allowed: nil), .optional, "App Store locales as Apple sends them (en-US, case-sensitive)"),
            ConfigField("environment", .stringList(allowed: ["Production", "Sandbox"]), .optional, "Production, Sandbox"),
            ConfigField("tenure_months", .object([
                ConfigField("min", .int(0...1_200), .optional, "at least this many whole months subscribed"),
                ConfigField("max", .int(0...1_200), .optional, "at most this many"),
            ]), .optional,
                "whole months subscribed, counted from Apple's recentSubscriptionStartDate (lapses under 60 days ignored); a purchase whose start is not known never matches"),
        ]), .optional, "conditions, all of which must hold (none: every known purchase)"),
        ConfigField("frequency_cap", .object([
            ConfigField("max", .int(1...1_000), .default("1"), "answers allowed to one purchase within the window"),
            ConfigField("within", .duration(.seconds(1)...(.seconds(3 * 366 * 86_400))), .default("30d"), "the window, back from the request"),
            ConfigField(
                "across_rules", .bool, .default("false"),
                "count every rule's answers to the purchase, not only this rule's (the default message never counts)"),
        ]), .optional, "stop matching a purchase once it was answered this often (Signet's record of answers)"),
        ConfigField("message", .string, .optional, "answer a text message: its UUID"),
        ConfigField("alternate_product", .object([
            ConfigField("message", .string, .optional, "the switch-plan message's UUID (no image); required"),
            ConfigField("product", .string, .optional, "the product to suggest, in the same subscription group; required"),
            ConfigField(
                "billing_plan_type", .enumeration(RetentionAnswer.billingPlanTypes), .optional,
                "MONTHLY (monthly billing with a 12-month commitment) or BILLED_UPFRONT; only for products that offer it"),
        ]), .optional, "answer a switch-plan message"),
        ConfigField("promotional_offer", .object([
            ConfigField("message", .string, .optional, "the promotional-offer message's UUID (no image); required"),
            ConfigField("offer", .string, .optional, "the promotional offer's identifier in App Store Connect; required"),
            ConfigField("product", .string, .optional, "the offer's product (default: the request's)"),
        ]), .optional, "answer a promotional offer, signed with the In-App Purchase key"),
    ]

    /// A rule from one validated `rules:` item.
    init(_ config: ParsedConfig) throws(ConfigError) {
        let name = try config.string("name")
        var answers: [RetentionAnswer] = []
        if let message = try config.optionalString("message") {
            answers.append(.message(messageIdentifier: try Self.uuid(message, config, "message")))
        }
        // An absent object reads as one holding its defaults: only a written one answers.
        if config.contains("alternate_product"), let switchPlan = try config.object("alternate_product") {
            answers.append(.alternateProduct(
                messageIdentifier: try Self.uuid(try Self.required(switchPlan, "message"), switchPlan, "message"),
                productId: try Self.required(switchPlan, "product"), billingPlanType: try switchPlan.optionalString("billing_plan_type")))
        }
        if config.contains("promotional_offer"), let offer = try config.object("promotional_offer") {
            answers.append(.promotionalOffer(
                messageIdentifier: try Self.uuid(try Self.required(offer, "message"), offer, "message"),
                offerIdentifier: try Self.required(offer, "offer"), productId: try offer.optionalString("product")))
        }
        guard answers.count == 1, let answer = answers.first else {
            throw config.error(
                "'\(config.path)' must answer exactly one of message, alternate_product or promotional_offer (Apple takes one)")
        }
        let when = try config.object("when")
        var tenure: RetentionTenure?
        if let when, when.contains("tenure_months"), let bounds = try when.object("tenure_months") {
            tenure = RetentionTenure(min: try bounds.optionalInt("min"), max: try bounds.optionalInt("max"))
            if let min = tenure?.min, let max = tenure?.max, min > max {
                throw bounds.error("'\(bounds.path)': min (\(min)) is more than max (\(max))")
            }
        }
        var frequencyCap: RetentionFrequencyCap?
        if config.contains("frequency_cap"), let cap = try config.object("frequency_cap") {
            frequencyCap = RetentionFrequencyCap(
                max: try cap.int("max"), within: try cap.duration("within"), acrossRules: try cap.bool("across_rules"))
        }
        self.init(
            name: name, products: try when?.stringList("product"), entitlements: try when?.stringList("entitlement").map(Set.init),
            states: try when?.stringList("state").map { Set($0.compactMap(SubscriptionState.init(rawValue:))) },
            refunded: try when?.optionalBool("refunded"), refundRequested: try when?.optionalBool("refund_requested"),
            consentRestricted: try when?.optionalBool("consent_restricted") ?? false,
            locales: try when?.stringList("locale").map(Set.init), environments: try when?.stringList("environment").map(Set.init),
            tenureMonths: tenure, frequencyCap: frequencyCap, answer: answer)
    }

    /// A key the answer needs (the spec cannot require it: an absent answer object would need it too).
    static func required(_ config: ParsedConfig, _ key: String) throws(ConfigError) -> String {
        guard let value = try config.optionalString(key), !value.isEmpty else {
            throw config.error("'\(config.path)' needs '\(key)'")
        }
        return value
    }

    /// A message identifier, lower-cased: Apple's identifiers are UUIDs.
    static func uuid(_ text: String, _ config: ParsedConfig, _ key: String) throws(ConfigError) -> String {
        guard let uuid = UUID(uuidString: text) else {
            throw config.error("'\(config.path).\(key)' must be a message's UUID, not '\(text)'", key: key)
        }
        return uuid.uuidString.lowercased()
    }
}

extension RetentionPolicy {
    /// The In-App Purchase key's settings, read only when a rule answers a promotional offer.
    static let keyFields: Set<String> = ["key_id", "issuer_id", "private_key", "bundle_id"]

    /// The policy of a validated `retention:` section.
    public init(_ config: ParsedConfig) throws(ConfigError) {
        let rules = try config.objectList("rules").map { item throws(ConfigError) in try RetentionRule(item) }
        var seen: Set<String> = []
        for (index, rule) in rules.enumerated() where !seen.insert(rule.name).inserted {
            throw config.error("'\(config.path).rules[\(index)]': another rule is named '\(rule.name)' already", key: "rules")
        }
        let path = try config.string("path")
        guard path.hasPrefix("/") else { throw config.error("'\(config.path).path' must start with /", key: "path") }
        let keep = try config.duration("keep_answers")
        if let capped = rules.first(where: { ($0.frequencyCap?.within ?? .zero) > keep }), let within = capped.frequencyCap?.within {
            throw config.error(
                "'\(config.path).keep_answers' (\(ConfigDuration.format(keep))) is shorter than rule '\(capped.name)''s frequency_cap.within "
                    + "(\(ConfigDuration.format(within))): the cap would forget answers it counts; raise keep_answers",
                key: "keep_answers")
        }
        self.init(
            path: path, defaultMessage: try RetentionRule.uuid(try config.string("default_message"), config, "default_message"),
            rules: rules, offerSignature: OfferSignatureVersion(rawValue: try config.string("offer_signature")) ?? .v2,
            decisionTimeout: try config.duration("decision_timeout"), maxPendingLookups: try config.int("max_pending_lookups"),
            keepAnswers: keep)
    }

    /// The signer for promotional offers from the section's key settings, expanded from `env`;
    /// nil when no rule answers one. Throws naming the first missing setting.
    package static func signer(_ config: ParsedConfig, policy: RetentionPolicy, env: [String: String]) throws -> OfferSigner? {
        guard policy.signsOffers else { return nil }
        func value(_ key: String) throws(ConfigError) -> String {
            let value = try Interpolator.expand(try config.string(key), environment: env, path: config.path)
            guard !value.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw config.error(
                    "'\(config.path).\(key)' is not set: a rule answers a promotional offer, which the In-App Purchase key signs", key: key)
            }
            return value
        }
        return OfferSigner(credentials: try AppStoreAPICredentials(
            keyId: try value("key_id"), issuerId: try value("issuer_id"), bundleId: try value("bundle_id"),
            privateKeyFile: try value("private_key")))
    }
}
