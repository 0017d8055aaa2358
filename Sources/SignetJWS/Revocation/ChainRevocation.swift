import Foundation
public import SignetOpenSSL

/// The answers of an online revocation check of a chain, one per non-root certificate.
public struct ChainRevocation: Sendable {
    /// Leaf first; the root is never asked about (nothing above it could revoke it).
    public let answers: [(certificate: X509Certificate, answer: RevocationAnswer)]

    /// The answers, leaf first.
    public init(answers: [(certificate: X509Certificate, answer: RevocationAnswer)]) {
        self.answers = answers
    }

    /// The chain's answer: revoked when any certificate is, else the first failure, else good
    /// until the earliest nextUpdate (good until `distantFuture` for a chain with nothing to ask).
    public var verdict: RevocationAnswer {
        if let revoked = answers.first(where: { if case .revoked = $0.answer { true } else { false } }) { return revoked.answer }
        if let failed = answers.first(where: { if case .failed = $0.answer { true } else { false } }) { return failed.answer }
        let earliest = answers.compactMap { if case .good(let nextUpdate) = $0.answer { nextUpdate } else { nil } }.min()
        return .good(nextUpdate: earliest ?? .distantFuture)
    }
}
