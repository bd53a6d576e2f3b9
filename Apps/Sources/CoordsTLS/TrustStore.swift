import Foundation
import NIOSSL

/// A trust store that cannot be used: `SSL_CERT_FILE` names something that is not a readable
/// file of PEM certificates.
public struct TrustStoreError: Error, CustomStringConvertible {
    /// The sentence: the variable, the path, and what is wrong with it.
    public let description: String
}

/// The certificates our TLS clients (the CLI's HTTPS and `wss://` connections, the relay's push
/// deliveries and its PostgreSQL connections with `sslmode=verify-*`) check a server against.
///
/// By default that is the system's trust store (Debian: `/etc/ssl/certs/ca-certificates.crt`).
/// A private certificate authority is added the way OpenSSL, curl and Python take it:
/// `SSL_CERT_FILE` names a PEM bundle that **replaces** the system's bundle (append the
/// authority to a copy of the system's bundle to trust both). SwiftNIO's TLS does not read the
/// variable itself; every client of ours builds its configuration here. `SSL_CERT_DIR` is not
/// read (SwiftNIO 2.37 cannot load a directory as additional roots).
public enum TrustStore {
    /// A client configuration with full verification (chain, dates, host name) against the trust
    /// store the environment selects.
    /// - Parameter environment: the variables to read (the process's by default).
    /// - Returns: a new configuration the caller owns and may refine.
    /// - Throws: ``TrustStoreError`` when `SSL_CERT_FILE` cannot be read or holds no PEM
    ///   certificate (one line naming the variable and the path).
    public static func clientConfiguration(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        if let path = environment["SSL_CERT_FILE"], !path.isEmpty {
            let certificates: [NIOSSLCertificate]
            do {
                certificates = try NIOSSLCertificate.fromPEMFile(path)
            } catch {
                throw TrustStoreError(description: "SSL_CERT_FILE names \(path), which is not a readable file of PEM certificates")
            }
            guard !certificates.isEmpty else {
                throw TrustStoreError(description: "SSL_CERT_FILE names \(path), which holds no PEM certificate")
            }
            configuration.trustRoots = .certificates(certificates)
        }
        return configuration
    }

    /// What to tell a user whose relay's certificate is not trusted: the variable that adds a
    /// private certificate authority.
    public static let advice = "to trust a private certificate authority, name its PEM file in SSL_CERT_FILE"
}
