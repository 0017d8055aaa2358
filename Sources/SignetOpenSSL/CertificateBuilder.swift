import COpenSSL
package import Foundation

/// Issues X.509 v3 certificates with EC keys, for test PKIs and fixtures.
///
/// Everything that matters for App Store chain tests is a knob: subject, serial,
/// validity window, basicConstraints, keyUsage, key identifiers, marker extensions
/// by OID (Apple marks its certificates with extensions whose value is DER NULL),
/// and the signature digest.
package struct CertificateBuilder: Sendable {
    /// An extension given by dotted OID with raw DER contents (the extnValue's inner bytes).
    package struct CustomExtension: Sendable, Hashable {
        package var oid: String
        package var critical: Bool
        /// DER placed inside the extnValue OCTET STRING; `05 00` (NULL) like Apple's markers.
        package var value: [UInt8]
        package init(oid: String, critical: Bool = false, value: [UInt8] = [0x05, 0x00]) {
            self.oid = oid
            self.critical = critical
            self.value = value
        }
    }

    package var subjectCommonName: String
    package var subjectOrganization: String?
    package var subjectOrganizationalUnit: String?
    package var subjectCountry: String?
    package var serialNumber: UInt64
    package var notBefore: Date
    package var notAfter: Date
    /// The certified key.
    package var publicKey: ECPublicKey
    /// basicConstraints: nil leaves the extension out; otherwise it is critical with this cA flag.
    package var isCA: Bool?
    /// pathLenConstraint, only written for CA certificates.
    package var pathLength: Int?
    /// keyUsage (critical) or nil to leave it out.
    package var keyUsage: KeyUsage?
    /// Add subjectKeyIdentifier and (when issued by another certificate) authorityKeyIdentifier.
    package var includeKeyIdentifiers: Bool
    package var customExtensions: [CustomExtension]
    /// The digest of the issuer's ECDSA signature over the certificate.
    package var signatureHash: SignatureHash
    /// An authorityInfoAccess extension naming this OCSP responder URL; nil leaves it out.
    package var ocspURL: String?
    /// A cRLDistributionPoints extension naming this CRL URL; nil leaves it out.
    package var crlURL: String?
    /// extendedKeyUsage (non-critical) by OpenSSL config name ("OCSPSigning" for a delegated
    /// OCSP responder); empty leaves it out.
    package var extendedKeyUsage: [String]

    package init(
        subjectCommonName: String, subjectOrganization: String? = nil, subjectOrganizationalUnit: String? = nil,
        subjectCountry: String? = "US", serialNumber: UInt64, notBefore: Date, notAfter: Date,
        publicKey: ECPublicKey, isCA: Bool? = nil, pathLength: Int? = nil, keyUsage: KeyUsage? = nil,
        includeKeyIdentifiers: Bool = true, customExtensions: [CustomExtension] = [],
        signatureHash: SignatureHash = .sha256, ocspURL: String? = nil, extendedKeyUsage: [String] = [],
        crlURL: String? = nil
    ) {
        self.subjectCommonName = subjectCommonName
        self.subjectOrganization = subjectOrganization
        self.subjectOrganizationalUnit = subjectOrganizationalUnit
        self.subjectCountry = subjectCountry
        self.serialNumber = serialNumber
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.publicKey = publicKey
        self.isCA = isCA
        self.pathLength = pathLength
        self.keyUsage = keyUsage
        self.includeKeyIdentifiers = includeKeyIdentifiers
        self.customExtensions = customExtensions
        self.signatureHash = signatureHash
        self.ocspURL = ocspURL
        self.crlURL = crlURL
        self.extendedKeyUsage = extendedKeyUsage
    }

    /// Signs the certificate. With `issuer` nil it is self-signed (issuer name = subject
    /// name) and `issuerKey` must be the private half of ``publicKey``.
    package func sign(issuer: X509Certificate?, issuerKey: ECPrivateKey) throws(OpenSSLError) -> X509Certificate {
        guard let x509 = X509_new() else { throw OpenSSLError.drain("create X509") }
        var owned = true
        defer { if owned { X509_free(x509) } }

        guard X509_set_version(x509, 2) == 1 else { throw OpenSSLError.drain("set version") }
        guard let serial = X509_get_serialNumber(x509), ASN1_INTEGER_set_uint64(serial, serialNumber) == 1 else {
            throw OpenSSLError.drain("set serial")
        }
        guard let name = X509_NAME_new() else { throw OpenSSLError.drain("create name") }
        defer { X509_NAME_free(name) }
        for (field, value) in [("C", subjectCountry), ("O", subjectOrganization), ("OU", subjectOrganizationalUnit), ("CN", subjectCommonName)] {
            guard let value else { continue }
            let bytes = Array(value.utf8)
            guard X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8, bytes, Int32(bytes.count), -1, 0) == 1 else {
                throw OpenSSLError.drain("set subject \(field)")
            }
        }
        guard X509_set_subject_name(x509, name) == 1 else { throw OpenSSLError.drain("set subject") }
        let issuerName = issuer.map { X509_get_subject_name($0.pointer) } ?? name
        guard X509_set_issuer_name(x509, issuerName) == 1 else { throw OpenSSLError.drain("set issuer") }

        guard ASN1_TIME_set(X509_getm_notBefore(x509), time_t(notBefore.timeIntervalSince1970)) != nil,
              ASN1_TIME_set(X509_getm_notAfter(x509), time_t(notAfter.timeIntervalSince1970)) != nil
        else { throw OpenSSLError.drain("set validity") }

        // X509_set_pubkey needs an EVP_PKEY: wrap (a new reference to) the EC_KEY.
        guard let subjectKey = EVP_PKEY_new() else { throw OpenSSLError.drain("create EVP_PKEY") }
        defer { EVP_PKEY_free(subjectKey) }
        guard EVP_PKEY_set1_EC_KEY(subjectKey, publicKey.key) == 1, X509_set_pubkey(x509, subjectKey) == 1 else {
            throw OpenSSLError.drain("set public key")
        }

        var context = X509V3_CTX()
        // For a self-signed certificate the issuer is the certificate itself.
        X509V3_set_ctx(&context, issuer?.pointer ?? x509, x509, nil, nil, 0)
        func add(_ nid: Int32, _ value: String) throws(OpenSSLError) {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else {
                throw OpenSSLError.drain("build extension \(value)")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x509, ext, -1) == 1 else { throw OpenSSLError.drain("add extension \(value)") }
        }
        if let isCA {
            var value = "critical,CA:\(isCA ? "TRUE" : "FALSE")"
            if isCA, let pathLength { value += ",pathlen:\(pathLength)" }
            try add(NID_basic_constraints, value)
        }
        if let keyUsage, !keyUsage.configNames.isEmpty {
            try add(NID_key_usage, "critical," + keyUsage.configNames.joined(separator: ","))
        }
        if includeKeyIdentifiers {
            try add(NID_subject_key_identifier, "hash")
            if issuer != nil { try add(NID_authority_key_identifier, "keyid:always") }
        }
        // Both after the key identifiers, so a certificate without them keeps its former layout.
        if !extendedKeyUsage.isEmpty { try add(NID_ext_key_usage, extendedKeyUsage.joined(separator: ",")) }
        if let ocspURL { try add(NID_info_access, "OCSP;URI:\(ocspURL)") }
        if let crlURL { try add(NID_crl_distribution_points, "URI:\(crlURL)") }
        for custom in customExtensions {
            let object = try OpenSSLSupport.object(forOID: custom.oid)
            defer { ASN1_OBJECT_free(object) }
            guard let octets = ASN1_OCTET_STRING_new() else { throw OpenSSLError.drain("create OCTET STRING") }
            defer { ASN1_OCTET_STRING_free(octets) }
            guard ASN1_OCTET_STRING_set(octets, custom.value, Int32(custom.value.count)) == 1,
                  let ext = X509_EXTENSION_create_by_OBJ(nil, object, custom.critical ? 1 : 0, octets)
            else { throw OpenSSLError.drain("build extension \(custom.oid)") }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(x509, ext, -1) == 1 else { throw OpenSSLError.drain("add extension \(custom.oid)") }
        }

        guard X509_sign(x509, issuerKey.pkey, signatureHash.evpMD) > 0 else { throw OpenSSLError.drain("sign certificate") }
        owned = false
        return try X509Certificate(takingOwnership: x509)
    }
}
