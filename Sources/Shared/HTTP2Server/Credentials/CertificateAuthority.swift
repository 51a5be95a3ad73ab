internal import COpenSSL
import Foundation

/// A self-made certificate authority: its own certificate and key, and server certificates it
/// signs (for `localhost` and `127.0.0.1`, or the names given), all valid for ten years.
public struct CertificateAuthority {
    public let key: KeyPair
    /// The CA's certificate as PEM.
    public let certificatePEM: String

    /// A new CA named `name`.
    public init(name: String) throws(HTTP2ServerError) {
        key = try KeyPair(generating: .p256)
        certificatePEM = try Self.issue(subject: name, publicKey: key, issuer: nil, signer: key,
                                        extensions: [(NID_basic_constraints, "critical,CA:TRUE"),
                                                     (NID_key_usage, "critical,keyCertSign,cRLSign")])
    }

    /// A server certificate for `names` (DNS names and IP addresses) and its new key.
    public func serverCertificate(commonName: String, dnsNames: [String], ipAddresses: [String]) throws(HTTP2ServerError) -> (certificatePEM: String, key: KeyPair) {
        let serverKey = try KeyPair(generating: .p256)
        let alternatives = (dnsNames.map { "DNS:" + $0 } + ipAddresses.map { "IP:" + $0 }).joined(separator: ",")
        let certificate = try Self.issue(subject: commonName, publicKey: serverKey, issuer: certificatePEM, signer: key,
                                         extensions: [(NID_basic_constraints, "critical,CA:FALSE"),
                                                      (NID_key_usage, "critical,digitalSignature,keyEncipherment"),
                                                      (NID_ext_key_usage, "serverAuth"),
                                                      (NID_subject_alt_name, alternatives)])
        return (certificate, serverKey)
    }

    static func issue(subject: String, publicKey: KeyPair, issuer issuerPEM: String?, signer: KeyPair,
                      extensions: [(Int32, String)]) throws(HTTP2ServerError) -> String {
        guard let certificate = X509_new() else { throw HTTP2ServerError.openSSL("X509_new") }
        defer { X509_free(certificate) }
        var issuerCertificate: OpaquePointer?
        if let issuerPEM {
            let bytes = Array(issuerPEM.utf8)
            issuerCertificate = bytes.withUnsafeBytes { buffer in
                guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
                defer { BIO_free(bio) }
                return PEM_read_bio_X509(bio, nil, nil, nil)
            }
            guard issuerCertificate != nil else { throw HTTP2ServerError.openSSL("cannot read the CA certificate") }
        }
        defer { if let issuerCertificate { X509_free(issuerCertificate) } }

        var serial = [UInt8](repeating: 0, count: 16)
        guard RAND_bytes(&serial, 16) == 1 else { throw HTTP2ServerError.openSSL("RAND_bytes") }
        serial[0] &= 0x7f
        let number = BN_bin2bn(serial, 16, nil)
        defer { BN_free(number) }
        guard X509_set_version(certificate, 2) == 1, BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate)) != nil,
            X509_gmtime_adj(X509_getm_notBefore(certificate), -3600) != nil,
            X509_gmtime_adj(X509_getm_notAfter(certificate), 10 * 365 * 86400) != nil,
            X509_set_pubkey(certificate, publicKey.key) == 1,
            herald_x509_name_add(X509_get_subject_name(certificate), "CN", subject) == 1
        else { throw HTTP2ServerError.openSSL("cannot fill in the certificate") }
        let issuerName = issuerCertificate.map { X509_get_subject_name($0) } ?? X509_get_subject_name(certificate)
        guard X509_set_issuer_name(certificate, issuerName) == 1 else { throw HTTP2ServerError.openSSL("X509_set_issuer_name") }

        var context = X509V3_CTX()
        X509V3_set_ctx(&context, issuerCertificate ?? certificate, certificate, nil, nil, 0)
        for (nid, value) in extensions + [(NID_subject_key_identifier, "hash")] {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, nid, value) else { throw HTTP2ServerError.openSSL("extension \(value)") }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(certificate, ext, -1) == 1 else { throw HTTP2ServerError.openSSL("X509_add_ext") }
        }
        if issuerCertificate != nil {
            guard let ext = X509V3_EXT_conf_nid(nil, &context, NID_authority_key_identifier, "keyid") else {
                throw HTTP2ServerError.openSSL("authority key identifier")
            }
            defer { X509_EXTENSION_free(ext) }
            guard X509_add_ext(certificate, ext, -1) == 1 else { throw HTTP2ServerError.openSSL("X509_add_ext") }
        }
        guard X509_sign(certificate, signer.key, EVP_sha256()) > 0 else { throw HTTP2ServerError.openSSL("X509_sign") }
        return try KeyPair.writePEM { bio in PEM_write_bio_X509(bio, certificate) }
    }
}
