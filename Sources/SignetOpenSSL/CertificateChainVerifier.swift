import COpenSSL
package import Foundation

/// Verifies a leaf certificate plus untrusted intermediates against a ``TrustStore``
/// at a chosen time, with OpenSSL's RFC 5280 path validation (`X509_verify_cert`).
///
/// - The time is explicit (`X509_V_FLAG_USE_CHECK_TIME`): App Store data is checked at
///   the moment it was signed, not at the moment it is read.
/// - Partial chains are not allowed: a chain must end in a self-signed root of the
///   store, never at an intermediate that merely appears there.
/// - OpenSSL checks every signature, validity window, basicConstraints CA flag and
///   path length; failures come back as a precise ``ChainVerificationError``.
package struct CertificateChainVerifier: Sendable {
    /// The trust anchors.
    package let trustStore: TrustStore
    /// Add `X509_V_FLAG_X509_STRICT`. Off by default: strict mode in OpenSSL 3.0
    /// demands keyUsage on CA certificates, critical basicConstraints and key
    /// identifiers, and Apple's own library vectors (chain A: no keyUsage, no AKI/SKI)
    /// fail it although Apple's library accepts them (`openssl verify -x509_strict`
    /// reports errors 81, 85, 86, 89, 92 on that chain).
    package var strict: Bool

    package init(trustStore: TrustStore, strict: Bool = false) {
        self.trustStore = trustStore
        self.strict = strict
    }

    /// Validates `leaf` → `intermediates` → a root at `epochSeconds`.
    ///
    /// OpenSSL considers a certificate valid at `t` when `notBefore ≤ t < notAfter`
    /// (whole seconds); ``VerifiedChain/isValid(atEpochSeconds:)`` applies the same rule.
    package func verify(
        leaf: X509Certificate, intermediates: [X509Certificate], atEpochSeconds epochSeconds: Int64
    ) throws(ChainVerificationError) -> VerifiedChain {
        guard let context = X509_STORE_CTX_new() else {
            throw ChainVerificationError(kind: .other, code: -1, depth: -1, subject: "", message: OpenSSLError.drain("create X509_STORE_CTX").description)
        }
        defer { X509_STORE_CTX_free(context) }
        guard let untrusted = OPENSSL_sk_new_null() else {
            throw ChainVerificationError(kind: .other, code: -1, depth: -1, subject: "", message: OpenSSLError.drain("create certificate stack").description)
        }
        defer { OPENSSL_sk_free(untrusted) }  // frees the stack only; the certificates stay owned by their objects
        for intermediate in intermediates {
            guard OPENSSL_sk_push(untrusted, UnsafeRawPointer(intermediate.pointer)) > 0 else {
                throw ChainVerificationError(kind: .other, code: -1, depth: -1, subject: "", message: OpenSSLError.drain("push intermediate").description)
            }
        }

        return try withExtendedLifetime((leaf, intermediates)) { () throws(ChainVerificationError) -> VerifiedChain in
            guard X509_STORE_CTX_init(context, trustStore.store, leaf.pointer, untrusted) == 1 else {
                throw ChainVerificationError(kind: .other, code: -1, depth: -1, subject: "", message: OpenSSLError.drain("init X509_STORE_CTX").description)
            }
            // set_time also turns on X509_V_FLAG_USE_CHECK_TIME.
            X509_STORE_CTX_set_time(context, 0, time_t(clamping: epochSeconds))
            if strict { X509_STORE_CTX_set_flags(context, UInt(X509_V_FLAG_X509_STRICT)) }

            let result = X509_verify_cert(context)
            guard result == 1 else {
                let code = X509_STORE_CTX_get_error(context)
                let depth = X509_STORE_CTX_get_error_depth(context)
                var subject = ""
                if let current = X509_STORE_CTX_get_current_cert(context), let name = X509_get_subject_name(current) {
                    if let line = X509_NAME_oneline(name, nil, 0) {
                        subject = String(cString: line)
                        CRYPTO_free(line, #fileID, #line)
                    }
                }
                let message = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
                OpenSSLError.drainErrorQueue()
                throw ChainVerificationError(
                    kind: .init(openSSLCode: code), code: code, depth: depth, subject: subject, message: message)
            }

            var certificates: [X509Certificate] = []
            if let chain = X509_STORE_CTX_get0_chain(context) {
                let count = OPENSSL_sk_num(chain)
                for index in 0..<max(count, 0) {
                    guard let raw = OPENSSL_sk_value(chain, index) else { continue }
                    let x509 = OpaquePointer(raw)
                    // get0_chain does not transfer ownership: take our own reference.
                    X509_up_ref(x509)
                    do {
                        certificates.append(try X509Certificate(takingOwnership: x509))
                    } catch {
                        throw ChainVerificationError(kind: .other, code: -1, depth: index, subject: "", message: "\(error)")
                    }
                }
            }
            return try VerifiedChain(certificates: certificates)
        }
    }

    /// Validates at a `Date` (truncated to whole seconds, as OpenSSL compares).
    package func verify(
        leaf: X509Certificate, intermediates: [X509Certificate], at date: Date
    ) throws(ChainVerificationError) -> VerifiedChain {
        try verify(leaf: leaf, intermediates: intermediates, atEpochSeconds: Int64(date.timeIntervalSince1970.rounded(.down)))
    }
}

/// A chain OpenSSL accepted: leaf first, trust anchor last.
package struct VerifiedChain: Sendable {
    /// Leaf, intermediates, root.
    package let certificates: [X509Certificate]
    /// The latest `notBefore` of the chain (seconds since 1970).
    package let validFromEpochSeconds: Int64
    /// The earliest `notAfter` of the chain (seconds since 1970).
    package let validUntilEpochSeconds: Int64

    init(certificates: [X509Certificate]) throws(ChainVerificationError) {
        guard !certificates.isEmpty else {
            throw ChainVerificationError(kind: .other, code: -1, depth: -1, subject: "", message: "OpenSSL returned an empty chain")
        }
        var from = Int64.min
        var until = Int64.max
        for certificate in certificates {
            guard let notBefore = certificate.notBeforeEpochSeconds, let notAfter = certificate.notAfterEpochSeconds else {
                throw ChainVerificationError(kind: .validity, code: -1, depth: -1, subject: certificate.subject, message: "malformed validity field")
            }
            from = max(from, notBefore)
            until = min(until, notAfter)
        }
        self.certificates = certificates
        self.validFromEpochSeconds = from
        self.validUntilEpochSeconds = until
    }

    /// The combined validity window, applying OpenSSL's rule `notBefore ≤ t < notAfter`
    /// to every certificate of the chain at once.
    package func isValid(atEpochSeconds epochSeconds: Int64) -> Bool {
        validFromEpochSeconds <= epochSeconds && epochSeconds < validUntilEpochSeconds
    }
}

/// Why OpenSSL rejected a chain, with its `X509_V_ERR_*` code kept for diagnostics.
package struct ChainVerificationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The broad category callers branch on.
    package enum Kind: String, Sendable, Hashable {
        /// A certificate's notAfter is before the verification time.
        case expired
        /// A certificate's notBefore is after the verification time.
        case notYetValid
        /// A validity field is malformed.
        case validity
        /// A certificate's signature does not verify with its issuer's key.
        case badSignature
        /// No issuer found among the intermediates and roots (includes "self-signed, not trusted").
        case unableToGetIssuer
        /// A certificate used as an issuer is not a CA, or path length / keyCertSign rules fail.
        case invalidCA
        /// Anything else OpenSSL reports.
        case other

        init(openSSLCode code: Int32) {
            switch code {
            case X509_V_ERR_CERT_HAS_EXPIRED: self = .expired
            case X509_V_ERR_CERT_NOT_YET_VALID: self = .notYetValid
            case X509_V_ERR_ERROR_IN_CERT_NOT_BEFORE_FIELD, X509_V_ERR_ERROR_IN_CERT_NOT_AFTER_FIELD: self = .validity
            case X509_V_ERR_CERT_SIGNATURE_FAILURE, X509_V_ERR_UNABLE_TO_DECRYPT_CERT_SIGNATURE,
                X509_V_ERR_UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY:
                self = .badSignature
            case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY,
                X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT,
                X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, X509_V_ERR_CERT_UNTRUSTED:
                self = .unableToGetIssuer
            case X509_V_ERR_INVALID_CA, X509_V_ERR_PATH_LENGTH_EXCEEDED, X509_V_ERR_KEYUSAGE_NO_CERTSIGN:
                self = .invalidCA
            default: self = .other
            }
        }
    }

    package var kind: Kind
    /// OpenSSL's `X509_V_ERR_*` value (-1 when the failure was not from OpenSSL's verifier).
    package var code: Int32
    /// Position in the chain of the certificate that failed (0 = leaf).
    package var depth: Int32
    /// Subject of the certificate that failed, in OpenSSL's one-line form.
    package var subject: String
    /// OpenSSL's text for the code.
    package var message: String

    package init(kind: Kind, code: Int32, depth: Int32, subject: String, message: String) {
        self.kind = kind
        self.code = code
        self.depth = depth
        self.subject = subject
        self.message = message
    }

    /// True for expired / not yet valid / malformed validity.
    package var isValidityProblem: Bool { kind == .expired || kind == .notYetValid || kind == .validity }

    package var description: String {
        let position = depth < 0 ? "" : " at depth \(depth)"
        let who = subject.isEmpty ? "" : " (\(subject))"
        return "\(message) [\(kind.rawValue), X509_V_ERR \(code)\(position)\(who)]"
    }
}
